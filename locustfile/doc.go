// Package locustfile reads Python locustfiles without Python.
package locustfile
