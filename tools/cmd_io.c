// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext io IMAGE -c CMD [-c CMD]...: mount IMAGE and run file commands
 * in order, like xfs_io, on a current file.  The first command that fails
 * stops the run with "swapext: CMD: strerror" and exit status 1.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool.h"

#define IO_MAX_ARGS	16
#define IO_MAX_FILES	64
#define IO_CHUNK	(1u << 20)

/* An open file of the run. */
struct io_file {
	int	f_fd;
	char	f_name[SX_NAME_MAX + 16];
};

/* The state of a run. */
struct io_state {
	struct sx_mount	*s_mp;
	struct io_file	s_files[IO_MAX_FILES];
	int		s_nfiles;
	int		s_cur;			/* index into s_files, or -1 */
	bool		s_shutdown;
	struct sx_crashdev *s_cd;		/* the image is opened through it (-x) */
	struct sx_update s_upd;			/* startupdate's, while s_updating */
	bool		s_updating;
};

/* One command: its name, arguments, and what it does. */
struct io_cmd {
	const char	*c_name;
	int		c_minargs;
	int		c_maxargs;
	bool		c_needs_file;
	int		(*c_fn)(struct io_state *s, int argc, char **argv);
	const char	*c_usage;
};

/* The current descriptor. */
static int io_fd(const struct io_state *s)
{
	return s->s_files[s->s_cur].f_fd;
}

/* Parse a byte count or offset with k/m/g/t suffixes. */
static int io_num(const char *arg, u64 *v)
{
	return tool_parse_size(arg, v);
}

/* The last two arguments, from argv[@i] on, as OFF LEN; -EINVAL unless exactly two. */
static int io_off_len(int argc, char **argv, int i, u64 *off, u64 *len)
{
	int error;

	if (argc - i != 2)
		return -EINVAL;
	error = io_num(argv[i], off);
	if (!error)
		error = io_num(argv[i + 1], len);
	return error;
}

/* Remember a newly opened descriptor and make it the current file. */
static int io_add_file(struct io_state *s, int fd, const char *name)
{
	if (s->s_nfiles == IO_MAX_FILES) {
		sx_close(s->s_mp, fd);
		return -EMFILE;
	}
	s->s_files[s->s_nfiles].f_fd = fd;
	snprintf(s->s_files[s->s_nfiles].f_name, sizeof(s->s_files[0].f_name), "%s", name);
	s->s_cur = s->s_nfiles++;
	return 0;
}

/* create NAME */
static int io_create(struct io_state *s, int argc, char **argv)
{
	int fd, error;

	error = sx_create(s->s_mp, argv[1], SX_IFREG | 0644, &fd);
	return error ? error : io_add_file(s, fd, argv[1]);
}

/* open NAME */
static int io_open(struct io_state *s, int argc, char **argv)
{
	int fd, error;

	error = sx_open(s->s_mp, argv[1], &fd);
	return error ? error : io_add_file(s, fd, argv[1]);
}

/* tmpfile */
static int io_tmpfile(struct io_state *s, int argc, char **argv)
{
	int fd, error;

	error = sx_open_tmpfile(s->s_mp, SX_IFREG | 0600, &fd);
	return error ? error : io_add_file(s, fd, "(tmpfile)");
}

/* link NAME: give the current file a name */
static int io_link(struct io_state *s, int argc, char **argv)
{
	int error = sx_link(s->s_mp, io_fd(s), argv[1]);

	if (!error && !strcmp(s->s_files[s->s_cur].f_name, "(tmpfile)"))
		snprintf(s->s_files[s->s_cur].f_name, sizeof(s->s_files[0].f_name), "%s",
			 argv[1]);
	return error;
}

/* unlink NAME */
static int io_unlink(struct io_state *s, int argc, char **argv)
{
	return sx_unlink(s->s_mp, argv[1]);
}

/* rename OLD NEW */
static int io_rename(struct io_state *s, int argc, char **argv)
{
	return sx_rename(s->s_mp, argv[1], argv[2]);
}

/* The index in s_files of descriptor @fd, or -1. */
static int io_find_fd(const struct io_state *s, int fd)
{
	int i;

	for (i = 0; i < s->s_nfiles; i++)
		if (s->s_files[i].f_fd == fd)
			return i;
	return -1;
}

/* Forget entry @i of s_files (its descriptor is closed already). */
static void io_forget(struct io_state *s, int i)
{
	memmove(&s->s_files[i], &s->s_files[i + 1],
		(size_t)(s->s_nfiles - i - 1) * sizeof(s->s_files[0]));
	s->s_nfiles--;
}

/*
 * close: close the current file; the one opened before it becomes current.
 * Neither file of an open update may be closed: commitupdate or
 * cancelupdate ends it first.
 */
static int io_close(struct io_state *s, int argc, char **argv)
{
	int error;

	if (s->s_updating && (io_fd(s) == s->s_upd.su_fd_orig ||
			      io_fd(s) == s->s_upd.su_fd_tmp))
		return -EBUSY;
	error = sx_close(s->s_mp, io_fd(s));
	io_forget(s, s->s_cur);
	s->s_cur = s->s_nfiles - 1;
	return error;
}

/* pwrite [-S BYTE] OFF LEN: write LEN bytes of BYTE (default 0xcd) at OFF */
static int io_pwrite(struct io_state *s, int argc, char **argv)
{
	u64 off, len, done = 0, n;
	unsigned long pat = 0xcd;
	char *end;
	u8 *buf;
	s64 r;
	int i = 1, error;

	if (argc > 1 && !strcmp(argv[1], "-S")) {
		if (argc < 3)
			return -EINVAL;
		pat = strtoul(argv[2], &end, 0);
		if (*end || pat > 0xff)
			return -EINVAL;
		i = 3;
	}
	error = io_off_len(argc, argv, i, &off, &len);
	if (error)
		return error;
	buf = malloc(IO_CHUNK);
	if (!buf)
		return -ENOMEM;
	memset(buf, (int)pat, IO_CHUNK);
	while (done < len) {
		n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
		r = sx_pwrite(s->s_mp, io_fd(s), buf, n, off + done);
		if (r < 0) {
			error = (int)r;
			break;
		}
		if (r == 0) {
			error = -EIO;		/* no progress and no error: never loop */
			break;
		}
		/* a short write is followed by the call that says why */
		done += (u64)r;
	}
	free(buf);
	printf("wrote %llu/%llu bytes at offset %llu\n", (unsigned long long)done,
	       (unsigned long long)len, (unsigned long long)off);
	return error;
}

/* Print @len bytes read at @off as xfs_io's pread -v does. */
static void io_dump(const u8 *buf, u64 len, u64 off)
{
	u64 i, j;

	for (i = 0; i < len; i += 16) {
		printf("%08llx: ", (unsigned long long)(off + i));
		for (j = i; j < i + 16; j++) {
			if (j < len)
				printf(" %02x", buf[j]);
			else
				printf("   ");
		}
		printf("  ");
		for (j = i; j < i + 16 && j < len; j++)
			putchar(isprint(buf[j]) ? buf[j] : '.');
		putchar('\n');
	}
}

/* pread [-v] OFF LEN */
static int io_pread(struct io_state *s, int argc, char **argv)
{
	bool verbose = argc > 1 && !strcmp(argv[1], "-v");
	int i = verbose ? 2 : 1, error;
	u64 off, len, done = 0, n;
	u8 *buf;
	s64 r;

	error = io_off_len(argc, argv, i, &off, &len);
	if (error)
		return error;
	buf = malloc(IO_CHUNK);
	if (!buf)
		return -ENOMEM;
	while (done < len) {
		n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
		r = sx_pread(s->s_mp, io_fd(s), buf, n, off + done);
		if (r < 0) {
			error = (int)r;
			break;
		}
		if (verbose)
			io_dump(buf, (u64)r, off + done);
		done += (u64)r;
		if ((u64)r < n)
			break;			/* end of file */
	}
	free(buf);
	if (!error)
		printf("read %llu/%llu bytes at offset %llu\n", (unsigned long long)done,
		       (unsigned long long)len, (unsigned long long)off);
	return error;
}

/* truncate SIZE */
static int io_truncate(struct io_state *s, int argc, char **argv)
{
	u64 size;
	int error = io_num(argv[1], &size);

	return error ? error : sx_truncate(s->s_mp, io_fd(s), size);
}

/* Parse the OFF LEN arguments of falloc and fpunch. */
static int io_range(char **argv, u64 *off, u64 *len)
{
	int error = io_num(argv[1], off);

	return error ? error : io_num(argv[2], len);
}

/* falloc OFF LEN */
static int io_falloc(struct io_state *s, int argc, char **argv)
{
	u64 off, len;
	int error = io_range(argv, &off, &len);

	return error ? error : sx_fallocate(s->s_mp, io_fd(s), off, len);
}

/* fpunch OFF LEN */
static int io_fpunch(struct io_state *s, int argc, char **argv)
{
	u64 off, len;
	int error = io_range(argv, &off, &len);

	return error ? error : sx_punch(s->s_mp, io_fd(s), off, len);
}

/* fsync */
static int io_fsync(struct io_state *s, int argc, char **argv)
{
	return sx_fsync(s->s_mp, io_fd(s));
}

/* clone SRC: the current file shares all of SRC's blocks */
static int io_clone(struct io_state *s, int argc, char **argv)
{
	int src, error;

	error = sx_open(s->s_mp, argv[1], &src);
	if (error)
		return error;
	error = sx_clone(s->s_mp, io_fd(s), src);
	sx_close(s->s_mp, src);
	return error;
}

/* clonerange SRC SRCOFF DSTOFF LEN */
static int io_clonerange(struct io_state *s, int argc, char **argv)
{
	u64 soff, doff, len;
	int src, error;

	error = io_num(argv[2], &soff);
	if (!error)
		error = io_num(argv[3], &doff);
	if (!error)
		error = io_num(argv[4], &len);
	if (error)
		return error;
	error = sx_open(s->s_mp, argv[1], &src);
	if (error)
		return error;
	error = sx_clone_range(s->s_mp, io_fd(s), doff, src, soff, len);
	sx_close(s->s_mp, src);
	return error;
}

/* Split a time in ns into seconds and nanoseconds. */
static void io_split_ns(s64 ns, s64 *sec, s64 *nsec)
{
	*sec = ns / 1000000000;
	*nsec = ns % 1000000000;
	if (*nsec < 0) {
		*nsec += 1000000000;
		(*sec)--;
	}
}

/*
 * swaprange [-n] [-f] [-F] [-e] [-s OFF1] [-d OFF2] [-l LEN] [-x N] DONOR:
 * swap [OFF1, +LEN) of DONOR (file1) with [OFF2, +LEN) of the current file
 * (file2).  -n NONATOMIC, -f FILE2_FRESH (with the current file's stat now),
 * -F FULL_FILES, -e TO_EOF; LEN defaults to the current file's size.  -x N
 * cuts the power after the swap's N-th device write (that write reaches
 * the media, nothing after it does): every later command and the unmount
 * fail, and the image is left for recovery.
 */
static int io_swaprange(struct io_state *s, int argc, char **argv)
{
	struct file_swap_range fsr;
	struct sx_crashdev_stats cs0, cs1;
	struct sx_stat st;
	const char *donor = NULL;
	u64 v, cut = 0;
	bool have_len = false;
	int i, fd1, error;

	memset(&fsr, 0, sizeof(fsr));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-n")) {
			fsr.flags |= FILE_SWAP_RANGE_NONATOMIC;
		} else if (!strcmp(a, "-f")) {
			fsr.flags |= FILE_SWAP_RANGE_FILE2_FRESH;
		} else if (!strcmp(a, "-F")) {
			fsr.flags |= FILE_SWAP_RANGE_FULL_FILES;
		} else if (!strcmp(a, "-e")) {
			fsr.flags |= FILE_SWAP_RANGE_TO_EOF;
		} else if (!strcmp(a, "-s") || !strcmp(a, "-d") || !strcmp(a, "-l") ||
			   !strcmp(a, "-x")) {
			if (i + 1 == argc || io_num(argv[i + 1], &v) || v > (u64)INT64_MAX)
				return -EINVAL;
			i++;
			if (a[1] == 's')
				fsr.file1_offset = (s64)v;
			else if (a[1] == 'd')
				fsr.file2_offset = (s64)v;
			else if (a[1] == 'l') {
				fsr.length = (s64)v;
				have_len = true;
			} else if (v == 0) {
				return -EINVAL;
			} else {
				cut = v;
			}
		} else if (a[0] == '-' || donor) {
			return -EINVAL;
		} else {
			donor = a;
		}
	}
	if (!donor)
		return -EINVAL;
	error = sx_fstat(s->s_mp, io_fd(s), &st);
	if (error)
		return error;
	if (!have_len)
		fsr.length = (s64)st.st_size;
	if (fsr.flags & FILE_SWAP_RANGE_FILE2_FRESH) {
		s64 ns;

		fsr.file2_ino = (s64)st.st_ino;
		io_split_ns(st.st_mtime_ns, &fsr.file2_mtime, &ns);
		fsr.file2_mtime_nsec = (s32)ns;
		io_split_ns(st.st_ctime_ns, &fsr.file2_ctime, &ns);
		fsr.file2_ctime_nsec = (s32)ns;
	}
	error = sx_open(s->s_mp, donor, &fd1);
	if (error)
		return error;
	fsr.file1_fd = fd1;
	sx_crashdev_get_stats(s->s_cd, &cs0);
	if (cut)
		sx_crashdev_cut_at_write(s->s_cd, cs0.cs_writes + cut, SX_CRASH_KEEP);
	error = sx_swap_file_range(s->s_mp, io_fd(s), &fsr);
	if (cut && !error)
		error = sx_sync(s->s_mp);
	sx_crashdev_get_stats(s->s_cd, &cs1);
	if (cut && !cs1.cs_dead) {
		sx_crashdev_cut_at_write(s->s_cd, 0, SX_CRASH_KEEP);
		if (!error)
				printf("swaprange: done in %llu writes, before the cut\n",
			       (unsigned long long)(cs1.cs_writes - cs0.cs_writes));
	} else if (cut) {
		printf("swaprange: power cut after write %llu of the swap\n",
		       (unsigned long long)cut);
		s->s_shutdown = true;
		sx_shutdown(s->s_mp);
		error = 0;
	}
	sx_close(s->s_mp, fd1);
	return error;
}

/*
 * startupdate: begin an atomic update of the current file.  A nameless
 * clone of it becomes the current file ("NAME (update)"); the commands
 * that follow change the clone, the original stays as it is.  One update
 * at a time (-EBUSY).
 */
static int io_startupdate(struct io_state *s, int argc, char **argv)
{
	char name[sizeof(s->s_files[0].f_name)];
	int orig = s->s_cur, error;

	if (s->s_updating)
		return -EBUSY;
	if (s->s_nfiles == IO_MAX_FILES)
		return -EMFILE;
	error = sx_update_start(s->s_mp, io_fd(s), &s->s_upd);
	if (error)
		return error;
	snprintf(name, sizeof(name), "%.*s (update)", SX_NAME_MAX, s->s_files[orig].f_name);
	s->s_updating = true;
	/* cannot fail: there is a free entry */
	return io_add_file(s, s->s_upd.su_fd_tmp, name);
}

/*
 * The update has ended (the library closed the clone's descriptor @tmp):
 * forget the clone's entry; the original becomes current.
 */
static void io_end_update(struct io_state *s, int tmp, int orig)
{
	int i = io_find_fd(s, tmp);

	if (i >= 0)
		io_forget(s, i);
	i = io_find_fd(s, orig);
	s->s_cur = i >= 0 ? i : s->s_nfiles - 1;
	s->s_updating = false;
}

/*
 * commitupdate [-n]: swap the clone's contents and size into the original,
 * if nothing changed the original since startupdate (else -EBUSY, and the
 * update stays open until cancelupdate or the end of the run); -n swaps
 * non-atomically.  The original becomes the current file.
 */
static int io_commitupdate(struct io_state *s, int argc, char **argv)
{
	u32 flags = 0;
	int tmp, error;

	if (argc == 2 && !strcmp(argv[1], "-n"))
		flags |= SX_UPDATE_NONATOMIC;
	else if (argc != 1)
		return -EINVAL;
	if (!s->s_updating)
		return -EINVAL;
	tmp = s->s_upd.su_fd_tmp;
	error = sx_update_commit(s->s_mp, &s->s_upd, flags);
	if (error && sx_update_active(&s->s_upd))
		return error;
	io_end_update(s, tmp, s->s_upd.su_fd_orig);
	return error;
}

/* cancelupdate: drop the clone and its changes; the original becomes current. */
static int io_cancelupdate(struct io_state *s, int argc, char **argv)
{
	int tmp, error;

	if (!s->s_updating)
		return -EINVAL;
	tmp = s->s_upd.su_fd_tmp;
	error = sx_update_cancel(s->s_mp, &s->s_upd);
	io_end_update(s, tmp, s->s_upd.su_fd_orig);
	return error;
}

/* The most bytes one atomic write of the tool takes (they are held in memory). */
#define IO_AWRITE_MAX	(1ull << 30)

/* Parse an optional "-S BYTE" and "-n" in any order from argv[1..]; index of the rest. */
static int io_aflags(int argc, char **argv, unsigned long *pat, u32 *flags, bool pattern)
{
	char *end;
	int i = 1;

	while (i < argc && argv[i][0] == '-' && argv[i][1]) {
		if (!strcmp(argv[i], "-n")) {
			*flags |= SX_ATOMIC_NOSYNC;
			i++;
		} else if (pattern && !strcmp(argv[i], "-S") && i + 1 < argc) {
			*pat = strtoul(argv[i + 1], &end, 0);
			if (*end || *pat > 0xff)
				return -EINVAL;
			i += 2;
		} else {
			return -EINVAL;
		}
	}
	return i;
}

/*
 * awrite [-S BYTE] [-n] OFF LEN: write LEN bytes of BYTE (default 0xcd) at
 * OFF of the current file atomically (sx_atomic_write(): all old or all
 * new after a crash) and durably (-n: not forced to the log).
 */
static int io_awrite(struct io_state *s, int argc, char **argv)
{
	unsigned long pat = 0xcd;
	u64 off, len;
	u32 flags = 0;
	u8 *buf;
	int i, error;

	i = io_aflags(argc, argv, &pat, &flags, true);
	if (i < 0)
		return i;
	error = io_off_len(argc, argv, i, &off, &len);
	if (error)
		return error;
	if (len > IO_AWRITE_MAX)
		return -EFBIG;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	memset(buf, (int)pat, len);
	error = sx_atomic_write(s->s_mp, io_fd(s), buf, len, off, flags);
	free(buf);
	if (!error)
		printf("atomically wrote %llu bytes at offset %llu\n", (unsigned long long)len,
		       (unsigned long long)off);
	return error;
}

/*
 * One range of awritev, "NAME:OFF:LEN[:BYTE]", NAME an open file of the
 * run (the last opened under that name); the bytes in *@bufp.
 */
static int io_arange(struct io_state *s, char *arg, struct sx_atomic_iov *v, u8 **bufp)
{
	char *off = strchr(arg, ':'), *len, *pat, *end;
	unsigned long b = 0xcd;
	int i, error;

	if (!off)
		return -EINVAL;
	*off++ = '\0';
	len = strchr(off, ':');
	if (!len)
		return -EINVAL;
	*len++ = '\0';
	pat = strchr(len, ':');
	if (pat) {
		*pat++ = '\0';
		b = strtoul(pat, &end, 0);
		if (*end || !*pat || b > 0xff)
			return -EINVAL;
	}
	for (i = s->s_nfiles - 1; i >= 0; i--)
		if (!strcmp(s->s_files[i].f_name, arg))
			break;
	if (i < 0)
		return -ENOENT;
	v->ai_fd = s->s_files[i].f_fd;
	error = io_num(off, &v->ai_off);
	if (!error)
		error = io_num(len, &v->ai_len);
	if (error)
		return error;
	if (v->ai_len > IO_AWRITE_MAX)
		return -EFBIG;
	*bufp = malloc(v->ai_len ? v->ai_len : 1);
	if (!*bufp)
		return -ENOMEM;
	memset(*bufp, (int)b, v->ai_len);
	v->ai_buf = *bufp;
	return 0;
}

/*
 * awritev [-n] NAME:OFF:LEN[:BYTE]...: write every range (of files open
 * in the run, by name) as one atomic change (sx_atomic_writev(): after a
 * crash all of them or none), durably (-n: not forced to the log).
 */
static int io_awritev(struct io_state *s, int argc, char **argv)
{
	struct sx_atomic_iov v[IO_MAX_ARGS];
	u8 *bufs[IO_MAX_ARGS];
	unsigned long pat = 0;
	u32 flags = 0, n = 0, k;
	int i, error = 0;

	i = io_aflags(argc, argv, &pat, &flags, false);
	if (i < 0)
		return i;
	if (i == argc)
		return -EINVAL;
	memset(v, 0, sizeof(v));
	for (; i < argc && !error; i++) {
		error = io_arange(s, argv[i], &v[n], &bufs[n]);
		if (!error)
			n++;
	}
	if (!error)
		error = sx_atomic_writev(s->s_mp, v, n, flags);
	if (!error)
		printf("atomically wrote %u ranges\n", n);
	for (k = 0; k < n; k++)
		free(bufs[k]);
	return error;
}

/* Print a timestamp in ns as seconds.nanoseconds. */
static void io_print_time(const char *what, s64 ns)
{
	s64 sec = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {
		rem += 1000000000;
		sec--;
	}
	printf("stat.%s = %lld.%09lld\n", what, (long long)sec, (long long)rem);
}

/* stat */
static int io_stat(struct io_state *s, int argc, char **argv)
{
	struct sx_stat st;
	char flags[64] = "";
	int error = sx_fstat(s->s_mp, io_fd(s), &st);

	if (error)
		return error;
	if (st.st_flags & SX_DIFLAG_REFLINK)
		strcat(flags, "reflink,");
	if (st.st_flags & SX_DIFLAG_IMMUTABLE)
		strcat(flags, "immutable,");
	if (st.st_flags & SX_DIFLAG_APPEND)
		strcat(flags, "append,");
	if (st.st_flags & SX_DIFLAG_SWAPFILE)
		strcat(flags, "swapfile,");
	if (flags[0])
		flags[strlen(flags) - 1] = '\0';
	else
		strcpy(flags, "none");
	printf("fd.path = \"%s\"\n", s->s_files[s->s_cur].f_name);
	printf("stat.ino = %llu\n", (unsigned long long)st.st_ino);
	printf("stat.gen = %llu\n", (unsigned long long)st.st_gen);
	printf("stat.type = %s\n", (st.st_mode & SX_IFMT) == SX_IFDIR ? "directory" :
	       "regular file");
	printf("stat.mode = 0%o\n", st.st_mode & 07777);
	printf("stat.nlink = %u\n", st.st_nlink);
	printf("stat.uid = %u\n", st.st_uid);
	printf("stat.gid = %u\n", st.st_gid);
	printf("stat.size = %llu\n", (unsigned long long)st.st_size);
	printf("stat.blocks = %llu\n", (unsigned long long)st.st_blocks);
	printf("stat.blksize = %u\n", st.st_blksize);
	printf("stat.flags = %s\n", flags);
	io_print_time("atime", st.st_atime_ns);
	io_print_time("mtime", st.st_mtime_ns);
	io_print_time("ctime", st.st_ctime_ns);
	return 0;
}

/*
 * bmap [-v]: the file's mappings and holes up to EOF in 512-byte units, as
 * xfs_io prints them; -v adds the flags of each.
 */
static int io_bmap(struct io_state *s, int argc, char **argv)
{
	bool verbose = argc > 1 && !strcmp(argv[1], "-v");
	struct sx_extent *ext;
	struct sx_stat st;
	u32 n, i, count;
	u64 pos = 0, end;
	int error, k = 0;

	if (argc > 1 && !verbose)
		return -EINVAL;
	error = sx_fstat(s->s_mp, io_fd(s), &st);
	if (!error)
		error = sx_fiemap(s->s_mp, io_fd(s), 0, ~0ull, NULL, 0, &count);
	if (error)
		return error;
	ext = calloc(count ? count : 1, sizeof(*ext));
	if (!ext)
		return -ENOMEM;
	error = sx_fiemap(s->s_mp, io_fd(s), 0, ~0ull, ext, count, &n);
	if (error)
		goto out;
	end = (st.st_size + st.st_blksize - 1) / st.st_blksize * st.st_blksize;
	printf("%s:\n", s->s_files[s->s_cur].f_name);
	if (verbose)
		printf(" EXT: FILE-OFFSET      BLOCK-RANGE      TOTAL FLAGS\n");
	for (i = 0; i <= n; i++) {
		u64 eoff = i < n ? ext[i].ex_off : end;

		if (eoff > pos) {
			if (verbose)
				printf(" %3d: [%llu..%llu]: hole %llu\n", k, (unsigned long long)(pos >> 9),
				       (unsigned long long)((eoff >> 9) - 1),
				       (unsigned long long)((eoff - pos) >> 9));
			else
				printf("\t%d: [%llu..%llu]: hole\n", k, (unsigned long long)(pos >> 9),
				       (unsigned long long)((eoff >> 9) - 1));
			k++;
		}
		if (i == n)
			break;
		if (verbose)
			printf(" %3d: [%llu..%llu]: %llu..%llu %llu %s%s%s\n", k,
			       (unsigned long long)(ext[i].ex_off >> 9),
			       (unsigned long long)(((ext[i].ex_off + ext[i].ex_len) >> 9) - 1),
			       (unsigned long long)(ext[i].ex_physical >> 9),
			       (unsigned long long)(((ext[i].ex_physical + ext[i].ex_len) >> 9) - 1),
			       (unsigned long long)(ext[i].ex_len >> 9),
			       ext[i].ex_flags & SX_EXTENT_UNWRITTEN ? "unwritten" : "",
			       (ext[i].ex_flags & SX_EXTENT_UNWRITTEN) &&
			       (ext[i].ex_flags & SX_EXTENT_SHARED) ? "," : "",
			       ext[i].ex_flags & SX_EXTENT_SHARED ? "shared" :
			       (ext[i].ex_flags & SX_EXTENT_UNWRITTEN ? "" : "-"));
		else
			printf("\t%d: [%llu..%llu]: %llu..%llu\n", k,
			       (unsigned long long)(ext[i].ex_off >> 9),
			       (unsigned long long)(((ext[i].ex_off + ext[i].ex_len) >> 9) - 1),
			       (unsigned long long)(ext[i].ex_physical >> 9),
			       (unsigned long long)(((ext[i].ex_physical + ext[i].ex_len) >> 9) - 1));
		k++;
		pos = ext[i].ex_off + ext[i].ex_len;
	}
	if (k == 0)
		printf("\tno extents\n");
out:
	free(ext);
	return error;
}

/* md5: the MD5 of the file's contents, like md5sum prints it */
static int io_md5(struct io_state *s, int argc, char **argv)
{
	struct tool_md5 m;
	struct sx_stat st;
	u8 digest[16], *buf;
	u64 off = 0;
	s64 r;
	int error, i;

	error = sx_fstat(s->s_mp, io_fd(s), &st);
	if (error)
		return error;
	buf = malloc(IO_CHUNK);
	if (!buf)
		return -ENOMEM;
	tool_md5_init(&m);
	while (off < st.st_size) {
		r = sx_pread(s->s_mp, io_fd(s), buf, IO_CHUNK, off);
		if (r < 0) {
			error = (int)r;
			break;
		}
		if (r == 0)
			break;
		tool_md5_update(&m, buf, (size_t)r);
		off += (u64)r;
	}
	free(buf);
	if (error)
		return error;
	tool_md5_final(&m, digest);
	for (i = 0; i < 16; i++)
		printf("%02x", digest[i]);
	printf("  %s\n", s->s_files[s->s_cur].f_name);
	return 0;
}

/* One name of ls. */
static int io_ls_one(void *arg, const char *name, u64 ino)
{
	printf("%llu %s\n", (unsigned long long)ino, name);
	return 0;
}

/* ls: every name in the root directory, with its inode number */
static int io_ls(struct io_state *s, int argc, char **argv)
{
	return sx_readdir(s->s_mp, io_ls_one, NULL);
}

/* Engine messages while the io tool shuts the filesystem down on purpose: none. */
static void io_log_quiet(void *arg, enum sx_log_level level, const char *msg)
{
}

/*
 * shutdown: stop all I/O at once, without flushing the log.  The engine's
 * "shutting down after error" message is for shutdowns nobody asked for;
 * this one was asked for, so it is not shown.
 */
static int io_shutdown(struct io_state *s, int argc, char **argv)
{
	sx_set_log_callback(io_log_quiet, NULL);
	sx_shutdown(s->s_mp);
	sx_set_log_callback(NULL, NULL);
	s->s_shutdown = true;
	return 0;
}

static const struct io_cmd io_cmds[] = {
	{ "create", 1, 1, false, io_create, "create NAME" },
	{ "open", 1, 1, false, io_open, "open NAME" },
	{ "tmpfile", 0, 0, false, io_tmpfile, "tmpfile" },
	{ "link", 1, 1, true, io_link, "link NAME" },
	{ "unlink", 1, 1, false, io_unlink, "unlink NAME" },
	{ "rename", 2, 2, false, io_rename, "rename OLD NEW" },
	{ "close", 0, 0, true, io_close, "close" },
	{ "pwrite", 2, 4, true, io_pwrite, "pwrite [-S BYTE] OFF LEN" },
	{ "pread", 2, 3, true, io_pread, "pread [-v] OFF LEN" },
	{ "truncate", 1, 1, true, io_truncate, "truncate SIZE" },
	{ "falloc", 2, 2, true, io_falloc, "falloc OFF LEN" },
	{ "fpunch", 2, 2, true, io_fpunch, "fpunch OFF LEN" },
	{ "fsync", 0, 0, true, io_fsync, "fsync" },
	{ "clone", 1, 1, true, io_clone, "clone SRC" },
	{ "clonerange", 4, 4, true, io_clonerange, "clonerange SRC SRCOFF DSTOFF LEN" },
	{ "swaprange", 1, 15, true, io_swaprange,
	  "swaprange [-n] [-f] [-F] [-e] [-s OFF1] [-d OFF2] [-l LEN] [-x N] DONOR" },
	{ "startupdate", 0, 0, true, io_startupdate, "startupdate" },
	{ "commitupdate", 0, 1, false, io_commitupdate, "commitupdate [-n]" },
	{ "cancelupdate", 0, 0, false, io_cancelupdate, "cancelupdate" },
	{ "awrite", 2, 5, true, io_awrite, "awrite [-S BYTE] [-n] OFF LEN" },
	{ "awritev", 1, 15, false, io_awritev, "awritev [-n] NAME:OFF:LEN[:BYTE]..." },
	{ "stat", 0, 0, true, io_stat, "stat" },
	{ "bmap", 0, 1, true, io_bmap, "bmap [-v]" },
	{ "md5", 0, 0, true, io_md5, "md5" },
	{ "ls", 0, 0, false, io_ls, "ls" },
	{ "shutdown", 0, 0, false, io_shutdown, "shutdown" },
};

/* Split @line into words (in place); returns the count, -1 if too many. */
static int io_split(char *line, char **argv)
{
	int argc = 0;
	char *p = line;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			return argc;
		if (argc == IO_MAX_ARGS)
			return -1;
		argv[argc++] = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (*p)
			*p++ = '\0';
	}
}

/* Run one command; returns 0 or the exit status after printing the error. */
static int io_run(struct io_state *s, const char *text)
{
	char line[1024], *argv[IO_MAX_ARGS];
	const struct io_cmd *c = NULL;
	size_t i;
	int argc, error;

	snprintf(line, sizeof(line), "%s", text);
	argc = io_split(line, argv);
	if (argc == 0)
		return tool_fail("empty command");
	if (argc < 0)
		return tool_fail("%s: too many arguments", text);
	for (i = 0; i < ARRAY_SIZE(io_cmds); i++)
		if (!strcmp(argv[0], io_cmds[i].c_name))
			c = &io_cmds[i];
	if (!c)
		return tool_fail("%s: unknown command", argv[0]);
	if (argc - 1 < c->c_minargs || argc - 1 > c->c_maxargs) {
		tool_fail("%s: usage: %s", argv[0], c->c_usage);
		return 1;
	}
	if (c->c_needs_file && s->s_cur < 0)
		return tool_error(-EBADF, "%s", argv[0]);
	error = c->c_fn(s, argc, argv);
	if (error)
		return tool_error(error, "%s", argv[0]);
	return 0;
}

/* Mount IMAGE and run the -c commands in order. */
int cmd_io(int argc, char **argv)
{
	struct sx_mount_opts mo = { .mo_name = "io" };
	struct io_state s = { .s_cur = -1 };
	const char *image = NULL;
	const char **cmds;
	struct sx_bdev *bd, *fbd;
	int ncmds = 0, i, status = 0, error;

	cmds = calloc((size_t)argc, sizeof(*cmds));
	if (!cmds)
		return tool_error(-ENOMEM, "io");
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c")) {
			if (i + 1 == argc) {
				free(cmds);
				return tool_usage("io");
			}
			cmds[ncmds++] = argv[++i];
		} else if (argv[i][0] == '-' || image) {
			free(cmds);
			tool_fail("io: unexpected argument '%s'", argv[i]);
			return tool_usage("io");
		} else {
			image = argv[i];
		}
	}
	if (!image) {
		free(cmds);
		return tool_usage("io");
	}
	error = sx_filedev_open(image, 0, 0, &fbd);
	if (error) {
		free(cmds);
		return tool_error(error, "io: cannot open %s", image);
	}
	/* through a crash device, so that swaprange -x can cut the power */
	error = sx_crashdev_create(fbd, 1, &bd, &s.s_cd);
	if (error) {
		sx_bdev_destroy(fbd);
		free(cmds);
		return tool_error(error, "io: %s", image);
	}
	error = sx_mount(bd, &mo, &s.s_mp);
	if (error) {
		sx_bdev_destroy(bd);
		sx_bdev_destroy(fbd);
		free(cmds);
		return tool_error(error, "io: cannot mount %s", image);
	}
	for (i = 0; i < ncmds && !status; i++)
		status = io_run(&s, cmds[i]);
	fflush(stdout);
	/* close what is open (a tmpfile's last close frees it) and unmount */
	for (i = s.s_nfiles - 1; i >= 0; i--) {
		error = sx_close(s.s_mp, s.s_files[i].f_fd);
		if (error && !s.s_shutdown && !status)
			status = tool_error(error, "close");
	}
	error = sx_unmount(s.s_mp);
	if (error && !s.s_shutdown && !status)
		status = tool_error(error, "io: unmount");
	sx_bdev_destroy(bd);
	sx_bdev_destroy(fbd);
	free(cmds);
	return status;
}
