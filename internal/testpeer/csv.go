package testpeer

import (
	"encoding/csv"
	"os"
	"testing"
)

// CSVRow reads the CSV file at path (a header line, then rows) and returns
// the first row whose first column is first, as header name to value: the
// "Total" row of a PREFIX_connections.csv, say. It returns nil when the
// file is missing, is not well-formed CSV (a row whose length differs from
// the header's, as in a file being written) or has no such row.
func CSVRow(path, first string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil
	}
	for _, row := range rows[1:] {
		if row[0] == first {
			m := make(map[string]string, len(row))
			for i, h := range rows[0] {
				m[h] = row[i]
			}
			return m
		}
	}
	return nil
}

// ReadCSV reads the whole CSV file at path, failing t when it cannot be
// opened or is not well-formed CSV.
func ReadCSV(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}
