/* A SQLite VFS over the default one that gathers a transaction's WAL frames into one write
 * (docs/aggregator.md, "Through a relay"). SQLite writes each WAL frame with two pwrite calls, its
 * 24-byte header and its page, so a commit of 14 dirty pages cost 28 system calls, each walking
 * the page cache on its own, on the committer's serial thread. Through this VFS the writes of a
 * WAL file that follow each other in the file wait in memory and go out as one pwrite before
 * anything can depend on them: before the WAL is synced, read, sized, truncated, controlled or
 * closed, before a write elsewhere in it, and before the database's wal-index header is published
 * (its shared-memory barrier and locks), so another connection, in this process or another, never
 * sees a frame that is not in the file. Every other file, and every other call, goes to the
 * default VFS unchanged. The frames' bytes, their order in the file, and the durability of a
 * COMMIT (its fsync) are SQLite's own; a crash loses only frames not yet synced, which SQLite's
 * recovery ignores as it always did. */
#ifndef LDPB_AGG_WAL_VFS_H
#define LDPB_AGG_WAL_VFS_H

/* The VFS's name for sqlite3_open_v2, registered (not as the default) on the first call; NULL if
 * SQLite has no default VFS or registering failed. Thread-safe. */
const char *agg_wal_vfs_name(void);

#endif
