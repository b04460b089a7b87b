package sqlitestore

import (
	"fmt"
	"sync"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// walVFSName is the VFS every connection of the store opens its file through (see
// registerWALVFS): SQLite's own default VFS, except that a transaction's WAL frames reach
// the file in one write at its commit frame instead of two writes per frame.
//
// Why: on the VMs GoRunner is measured on, a system call costs microseconds, and a commit
// of a run (about six pages) made twelve pwrite calls, the frame header and the page of
// each frame apart: ~24 µs, against ~3 µs for one write of the same bytes (BENCHMARKS.md,
// "one write per commit").
//
// Why it is safe. A frame held back is only ever one of the writing transaction's own, past
// the end of the WAL that readers see, and it is written before SQLite could publish it:
//   - SQLite publishes frames by updating the WAL index header after writing the commit
//     frame (walFrames, then walIndexWriteHdr). The commit frame's page completes the held
//     writes, and that xWrite writes them all before it returns, its error SQLite's to
//     handle as before. Readers, of this process or another, therefore find every frame
//     the header names in the file.
//   - Once the commit frame is written, writes go straight through until the write lock
//     goes: SQLite may then rewrite the transaction's frame headers in place (their
//     checksums, walRewriteChecksums) before it publishes the frames.
//   - Nothing is held for a WAL file whose database file is not known, as then the end of
//     the write lock (below) would not be seen.
//   - Any other call on the WAL file (read, sync, size, truncate, file control) writes
//     what is held first, so SQLite's own reads (checkpoint, recovery, checksums
//     rewritten) see its writes in order; a write that does not continue the held bytes
//     (a frame rewritten in place) writes them first too.
//   - Frames held when the connection lets go of the WAL write lock, or closes the WAL,
//     belong to a transaction that did not commit (a page cache spill, then a rollback;
//     SQLite's rollback reads the pages back, which writes them, but this does not rely
//     on that). They are dropped there: once the lock is gone another connection may
//     write at those offsets, and SQLite would ignore them anyway.
//
// A process killed while frames are held loses only a transaction that had not committed,
// which SQLite's recovery drops in any case; the database and WAL formats and the locking
// protocol are SQLite's own, so other processes (and the sqlite3 shell) share the file.
const walVFSName = "gorunner-wal"

// maxHeld bounds the bytes held for one WAL file: a larger transaction writes in parts.
// The unix VFS cannot write 128 KiB or more in one call (seekAndWriteFd masks the length
// with 0x1ffff), so a part stays under that; a run's commit is 6 to 11 frames, 25 to 45 KB.
const maxHeld = 120 << 10

// walFrameHeader is the size of a WAL frame's header; bytes 4 to 7 of it are the database
// size in pages after a commit, or 0 in a frame that is not a commit's last.
const walFrameHeader = 24

// walWriteLock is the WAL write lock's slot among the -shm locks (WAL_WRITE_LOCK).
const walWriteLock = 0

// fileExt is what this VFS keeps of each open file, in the memory SQLite gives the file
// past the base VFS's own part (this VFS's szOsFile is the base's plus this).
type fileExt struct {
	wal    uintptr // on a database file: the WAL file its connection has open, or 0
	db     uintptr // on a WAL file: the database file it belongs to, or 0
	buf    uintptr // on a WAL file: maxHeld bytes for the writes held back, 0 until the first
	start  int64   // the file offset of the first held byte
	held   int64   // how many bytes are held
	commit bool    // the last frame header held is a commit's: its page ends the commit
	// through: the commit frame is written, so every write goes straight through until the
	// write lock goes (SQLite may rewrite frame headers of the transaction in place, with
	// their checksums, before it publishes the frames: see walVFSName)
	through bool
}

var (
	registerOnce sync.Once
	registerErr  error

	baseVFS   uintptr // the default VFS, which does the work
	baseOpen  uintptr // its xOpen
	extOffset uintptr // where fileExt starts in a file's memory
)

// registerWALVFS registers walVFSName over SQLite's default VFS, once per process.
func registerWALVFS() error {
	registerOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		baseVFS = sqlite3.Xsqlite3_vfs_find(tls, 0)
		if baseVFS == 0 {
			registerErr = fmt.Errorf("registering the %s VFS: SQLite has no default VFS", walVFSName)
			return
		}
		// SQLite reads the VFS, and the io methods below, through the pointers it is given,
		// so they live in libc's memory, as SQLite's own do (Go's checkptr refuses a pointer
		// into Go's memory made from an integer), for the life of the process.
		p := libc.Xmalloc(tls, types.Size_t(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
		name, err := libc.CString(walVFSName)
		if p == 0 || err != nil {
			registerErr = fmt.Errorf("registering the %s VFS: out of memory", walVFSName)
			return
		}
		vfs := (*sqlite3.Tsqlite3_vfs)(at(p))
		*vfs = *(*sqlite3.Tsqlite3_vfs)(at(baseVFS))
		baseOpen = vfs.FxOpen
		extOffset = (uintptr(vfs.FszOsFile) + 7) &^ 7
		vfs.FszOsFile = int32(extOffset + unsafe.Sizeof(fileExt{}))
		vfs.FpNext = 0
		vfs.FzName = name
		setMethod(&vfs.FxOpen, vfsOpen)
		if rc := sqlite3.Xsqlite3_vfs_register(tls, p, 0); rc != sqlite3.SQLITE_OK {
			registerErr = fmt.Errorf("registering the %s VFS: SQLite error %d", walVFSName, rc)
		}
	})
	return registerErr
}

// at is the memory at address p, which SQLite handed over as an integer.
func at(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// ext is the fileExt of the open file f.
func ext(f uintptr) *fileExt { return (*fileExt)(at(f + extOffset)) }

// vfsOpen opens a file through the base VFS, then has this VFS's methods serve WAL and
// main database files opened with the base's usual methods (any other stays the base's).
func vfsOpen(tls *libc.TLS, _ uintptr, zName, f uintptr, flags int32, pOutFlags uintptr) int32 {
	*ext(f) = fileExt{}
	rc := method[func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32](&baseOpen)(tls, baseVFS, zName, f, flags, pOutFlags)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	switch {
	case flags&sqlite3.SQLITE_OPEN_WAL != 0 && walFiles.wrap(tls, methodsOf(f)):
		if db := sqlite3.Xsqlite3_database_file_object(tls, zName); db != 0 && dbFiles.serves(db) {
			ext(f).db, ext(db).wal = db, f
		}
	case flags&sqlite3.SQLITE_OPEN_MAIN_DB != 0:
		dbFiles.wrap(tls, methodsOf(f))
	}
	return rc
}

// method is the io method or VFS method at p (SQLite's methods are Go funcs, here as in
// the base VFS) as a func of type F, its signature.
func method[F any](p *uintptr) F { return *(*F)(unsafe.Pointer(p)) }

// setMethod has the io method or VFS method at p be fn.
func setMethod[F any](p *uintptr, fn F) { *(*F)(unsafe.Pointer(p)) = fn }

// methodsOf is where the io methods of the open file f are.
func methodsOf(f uintptr) *uintptr { return &(*sqlite3.Tsqlite3_file)(at(f)).FpMethods }

// fileKind is this VFS's io methods for one kind of file (WAL, main database), made from
// the base VFS's methods for that kind and calling them.
type fileKind struct {
	override func(m *sqlite3.Tsqlite3_io_methods) // sets this VFS's own methods in m
	once     sync.Once
	base     uintptr // the base VFS's methods these were made from
	methods  uintptr // this VFS's, in libc's memory (see registerWALVFS); 0 if none
}

var walFiles, dbFiles fileKind

func init() {
	walFiles.override = func(m *sqlite3.Tsqlite3_io_methods) {
		setMethod(&m.FxClose, walClose)
		setMethod(&m.FxRead, walRead)
		setMethod(&m.FxWrite, walWrite)
		setMethod(&m.FxTruncate, walTruncate)
		setMethod(&m.FxSync, walSync)
		setMethod(&m.FxFileSize, walFileSize)
		setMethod(&m.FxFileControl, walFileControl)
	}
	dbFiles.override = func(m *sqlite3.Tsqlite3_io_methods) {
		setMethod(&m.FxClose, dbClose)
		setMethod(&m.FxShmLock, dbShmLock)
	}
}

// wrap has k's methods serve the file whose methods are at *m, if the base VFS gave it the
// same methods as the first file of k's kind (from which k's methods are made), and
// reports whether it did.
func (k *fileKind) wrap(tls *libc.TLS, m *uintptr) bool {
	k.once.Do(func() {
		k.base = *m
		if k.methods = libc.Xmalloc(tls, types.Size_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{}))); k.methods != 0 {
			methods := (*sqlite3.Tsqlite3_io_methods)(at(k.methods))
			*methods = *(*sqlite3.Tsqlite3_io_methods)(at(*m))
			k.override(methods)
		}
	})
	if *m != k.base || k.methods == 0 {
		return false
	}
	*m = k.methods
	return true
}

// serves reports whether k's methods serve the open file f.
func (k *fileKind) serves(f uintptr) bool {
	return k.methods != 0 && *methodsOf(f) == k.methods
}

// baseOf is the base VFS's methods of k's kind, which its methods call.
func (k *fileKind) baseOf() *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(at(k.base))
}

// baseWrite writes through the base VFS. It reads the base's xWrite on each call, so that a
// test can count the writes (countWALWrites) at no cost here.
func baseWrite(tls *libc.TLS, f, buf uintptr, n int32, off int64) int32 {
	return method[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](&walFiles.baseOf().FxWrite)(tls, f, buf, n, off)
}

// flush writes the bytes held for the WAL file f, and holds none after, whatever the
// outcome: SQLite answers a failed write by rolling the transaction back.
func flush(tls *libc.TLS, f uintptr) int32 {
	e := ext(f)
	if e.held == 0 {
		return sqlite3.SQLITE_OK
	}
	n, off := e.held, e.start
	e.held = 0
	return baseWrite(tls, f, e.buf, int32(n), off)
}

// walWrite holds a write to a WAL file that continues the bytes held, and writes them all
// with the commit frame's page (see walVFSName).
func walWrite(tls *libc.TLS, f, buf uintptr, n int32, off int64) int32 {
	e := ext(f)
	if e.db == 0 || e.through {
		return baseWrite(tls, f, buf, n, off)
	}
	ends := e.commit // this is the commit frame's page
	e.commit = false
	if e.held > 0 && (off != e.start+e.held || !e.reserve(tls, int64(n))) {
		if rc := flush(tls, f); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if e.held == 0 && (ends || !e.reserve(tls, int64(n))) {
		e.through = ends
		return baseWrite(tls, f, buf, n, off)
	}
	if e.held == 0 {
		e.start = off
	}
	libc.Xmemcpy(tls, e.buf+uintptr(e.held), buf, types.Size_t(n))
	e.held += int64(n)
	if ends {
		e.through = true
		return flush(tls, f)
	}
	if n == walFrameHeader {
		e.commit = *(*[4]byte)(at(buf + 4)) != [4]byte{}
	}
	return sqlite3.SQLITE_OK
}

// reserve makes room in e.buf for n more bytes, up to maxHeld in all, and reports whether
// it could.
func (e *fileExt) reserve(tls *libc.TLS, n int64) bool {
	if e.held+n > maxHeld {
		return false
	}
	if e.buf == 0 {
		e.buf = libc.Xmalloc(tls, maxHeld)
	}
	return e.buf != 0
}

// walClose drops what is held: only a transaction that did not commit can have left it.
func walClose(tls *libc.TLS, f uintptr) int32 {
	e := ext(f)
	if e.db != 0 {
		ext(e.db).wal = 0
	}
	if e.buf != 0 {
		libc.Xfree(tls, e.buf)
	}
	*e = fileExt{}
	return method[func(*libc.TLS, uintptr) int32](&walFiles.baseOf().FxClose)(tls, f)
}

func walRead(tls *libc.TLS, f, buf uintptr, n int32, off int64) int32 {
	if rc := flush(tls, f); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return method[func(*libc.TLS, uintptr, uintptr, int32, int64) int32](&walFiles.baseOf().FxRead)(tls, f, buf, n, off)
}

func walTruncate(tls *libc.TLS, f uintptr, size int64) int32 {
	if rc := flush(tls, f); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return method[func(*libc.TLS, uintptr, int64) int32](&walFiles.baseOf().FxTruncate)(tls, f, size)
}

func walSync(tls *libc.TLS, f uintptr, flags int32) int32 {
	if rc := flush(tls, f); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return method[func(*libc.TLS, uintptr, int32) int32](&walFiles.baseOf().FxSync)(tls, f, flags)
}

func walFileSize(tls *libc.TLS, f, pSize uintptr) int32 {
	if rc := flush(tls, f); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return method[func(*libc.TLS, uintptr, uintptr) int32](&walFiles.baseOf().FxFileSize)(tls, f, pSize)
}

func walFileControl(tls *libc.TLS, f uintptr, op int32, arg uintptr) int32 {
	if rc := flush(tls, f); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return method[func(*libc.TLS, uintptr, int32, uintptr) int32](&walFiles.baseOf().FxFileControl)(tls, f, op, arg)
}

func dbClose(tls *libc.TLS, f uintptr) int32 {
	if w := ext(f).wal; w != 0 {
		ext(w).db = 0
	}
	*ext(f) = fileExt{}
	return method[func(*libc.TLS, uintptr) int32](&dbFiles.baseOf().FxClose)(tls, f)
}

// dbShmLock drops the frames still held for the connection's WAL when it lets go of the
// WAL write lock (see walVFSName), then does as the base VFS does.
func dbShmLock(tls *libc.TLS, f uintptr, offset, n, flags int32) int32 {
	if w := ext(f).wal; w != 0 && flags&sqlite3.SQLITE_SHM_UNLOCK != 0 && offset <= walWriteLock && walWriteLock < offset+n {
		e := ext(w)
		e.held, e.commit, e.through = 0, false, false
	}
	return method[func(*libc.TLS, uintptr, int32, int32, int32) int32](&dbFiles.baseOf().FxShmLock)(tls, f, offset, n, flags)
}
