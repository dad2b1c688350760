package locustfile

import (
	"os"
	"testing"
)

func TestTmpShow(t *testing.T) {
	b, _, _ := Convert(os.Getenv("F"))
	t.Log(string(b))
}
