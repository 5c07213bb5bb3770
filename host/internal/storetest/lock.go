package storetest

import (
	"context"
	"database/sql"
	"sync"
	"testing"
)

// HoldWriteLock takes SQLite's write lock on the database at path from a
// connection of the test's own, as another process's commit would: no
// other connection's write commits until release (called once; the
// test's end calls it too).
func HoldWriteLock(tb testing.TB, path string) (release func()) {
	tb.Helper()
	db := OwnConn(tb, path)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		tb.Fatal(err)
	}
	release = sync.OnceFunc(func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			tb.Error(err)
		}
		conn.Close()
	})
	tb.Cleanup(release)
	return release
}

// OwnConn opens the SQLite database at path apart from any store on it,
// closed when the test ends.
func OwnConn(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
