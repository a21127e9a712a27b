// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext mkfs [-b BLOCKSIZE] [-s SIZE] [-l LOGSIZE] [-L LABEL] [-O atomic_swap] IMAGE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "tool.h"

/* Size of a new image when none is given and the file is new or empty. */
#define MKFS_DEFAULT_SIZE	(256ull << 20)

/* Parse the -O list into log-incompat feature bits. */
static int mkfs_parse_features(const char *list, u32 *log_incompat)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int error = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "atomic_swap")) {
			*log_incompat |= SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
		} else {
			tool_fail("mkfs: unknown feature '%s' (known: atomic_swap)", tok);
			error = -EINVAL;
			break;
		}
	}
	free(copy);
	return error;
}

/* Print what was made, read back through a read-only mount. */
static int mkfs_report(struct sx_bdev *bd, const char *path)
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY,
				    .mo_name = "mkfs" };
	struct sx_mount *mp;
	struct sx_info in;
	char sz[32], feat[64];
	int error;

	error = sx_mount(bd, &mo, &mp);
	if (error)
		return tool_error(error, "mkfs: %s: the new filesystem does not mount", path);
	sx_get_info(mp, &in);
	sx_unmount(mp);
	printf("%s: %llu blocks of %u bytes (%s), log %u blocks, bitmap %u blocks, %llu blocks free\n",
	       path, (unsigned long long)in.in_dblocks, in.in_blocksize,
	       tool_format_size(in.in_dblocks * in.in_blocksize, sz, sizeof(sz)),
	       in.in_logblocks, in.in_bmapblocks, (unsigned long long)in.in_free_blocks);
	printf("%s: label '%s', log features: %s\n", path, in.in_label,
	       tool_features(in.in_feat_log_incompat, TOOL_FEAT_LOG_INCOMPAT, feat, sizeof(feat)));
	return 0;
}

/* Make a new filesystem on an image file (created or extended as needed). */
int cmd_mkfs(int argc, char **argv)
{
	struct sx_mkfs_opts opts;
	struct sx_bdev *bd;
	const char *path;
	u64 size = 0, logsize = 0, v;
	bool have_size = false;
	struct stat st;
	unsigned int flags = 0;
	int c, error;

	memset(&opts, 0, sizeof(opts));
	optind = 1;
	while ((c = getopt(argc, argv, "b:s:l:L:O:")) != -1) {
		switch (c) {
		case 'b':
			if (tool_parse_size(optarg, &v) || v < SX_MIN_BLOCKSIZE ||
			    v > SX_MAX_BLOCKSIZE || (v & (v - 1))) {
				tool_fail("mkfs: block size '%s' is not a power of 2 from 512 to 64k",
					  optarg);
				return tool_usage("mkfs");
			}
			opts.mk_blocksize = (u32)v;
			break;
		case 's':
			if (tool_parse_size(optarg, &size) || size == 0) {
				tool_fail("mkfs: bad size '%s'", optarg);
				return tool_usage("mkfs");
			}
			have_size = true;
			break;
		case 'l':
			if (tool_parse_size(optarg, &logsize) || logsize == 0) {
				tool_fail("mkfs: bad log size '%s'", optarg);
				return tool_usage("mkfs");
			}
			break;
		case 'L':
			if (strlen(optarg) > SX_LABEL_SIZE) {
				tool_fail("mkfs: label '%s' is longer than %d bytes", optarg,
					  SX_LABEL_SIZE);
				return tool_usage("mkfs");
			}
			opts.mk_label = optarg;
			break;
		case 'O':
			if (mkfs_parse_features(optarg, &opts.mk_feat_log_incompat))
				return tool_usage("mkfs");
			break;
		default:
			return tool_usage("mkfs");
		}
	}
	if (optind != argc - 1) {
		tool_fail("mkfs: %s", optind >= argc ? "no image given" : "too many arguments");
		return tool_usage("mkfs");
	}
	path = argv[optind];

	if (logsize) {
		u32 bs = opts.mk_blocksize ? opts.mk_blocksize : SX_DEFAULT_BLOCKSIZE;

		if (logsize % bs || logsize / bs > SX_MAX_LOGBLOCKS ||
		    logsize / bs < SX_MIN_LOGBLOCKS) {
			tool_fail("mkfs: log size %llu is not a multiple of the %u-byte block size between %u and %u blocks",
				  (unsigned long long)logsize, bs, SX_MIN_LOGBLOCKS,
				  SX_MAX_LOGBLOCKS);
			return tool_usage("mkfs");
		}
		opts.mk_logblocks = (u32)(logsize / bs);
	}
	if (!have_size) {
		if (stat(path, &st) < 0) {
			if (errno != ENOENT)
				return tool_error(-errno, "mkfs: %s", path);
			size = MKFS_DEFAULT_SIZE;
		} else if (S_ISREG(st.st_mode) && st.st_size == 0) {
			size = MKFS_DEFAULT_SIZE;
		}
	}
	if (size) {
		if (size % 512)
			return tool_fail("mkfs: size %llu is not a multiple of 512 bytes",
					 (unsigned long long)size);
		flags |= SX_FILEDEV_CREATE;
	}

	error = sx_filedev_open(path, flags, size, &bd);
	if (error)
		return tool_error(error, "mkfs: cannot open %s", path);
	error = sx_mkfs(bd, &opts);
	if (error) {
		u64 devsize = bd->bd_size;
		u32 min = 0, res = 0, bs = opts.mk_blocksize ? opts.mk_blocksize :
					      SX_DEFAULT_BLOCKSIZE;
		int lerr = -EINVAL;

		/* a log too small for the largest transaction: say what is enough */
		if (error == -EINVAL)
			lerr = sx_mkfs_log_min(bd, &opts, &min, &res);
		sx_bdev_destroy(bd);
		if (!lerr && !min)
			return tool_error(error, "mkfs: %s: the largest transaction (%u bytes) does not fit any log record with %u-byte blocks; use smaller blocks",
					  path, res, bs);
		if (!lerr && opts.mk_logblocks && opts.mk_logblocks < min)
			return tool_error(error, "mkfs: %s: a log of %llu bytes is too small for the largest transaction (%u bytes); the smallest log is %llu bytes (-l %lluk)",
					  path, (unsigned long long)opts.mk_logblocks * bs, res,
					  (unsigned long long)min * bs,
					  (unsigned long long)min * bs / 1024);
		if (!lerr && !opts.mk_logblocks)
			return tool_error(error, "mkfs: %s: a device of %llu bytes is too small for the smallest log (%llu bytes)",
					  path, (unsigned long long)devsize,
					  (unsigned long long)min * bs);
		if (error == -EINVAL)
			return tool_error(error, "mkfs: %s: impossible geometry for a device of %llu bytes",
					  path, (unsigned long long)devsize);
		return tool_error(error, "mkfs: %s", path);
	}
	error = mkfs_report(bd, path);
	sx_bdev_destroy(bd);
	return error;
}
