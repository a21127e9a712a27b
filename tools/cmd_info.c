// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext info IMAGE: describe a filesystem without recovering its log.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "tool.h"

/* Print every field of @in, one per line. */
static void info_print(const char *path, const struct sx_info *in)
{
	char a[48], b[48], f[96];
	u64 data = in->in_dblocks - in->in_datastart;
	bool clean = in->in_log_head == in->in_log_tail;

	printf("image:              %s\n", path);
	printf("version:            %u\n", in->in_version);
	printf("uuid:               %s\n", tool_format_uuid(in->in_uuid, a, sizeof(a)));
	printf("label:              %s\n", in->in_label[0] ? in->in_label : "(none)");
	printf("block size:         %u bytes\n", in->in_blocksize);
	printf("sector size:        %u bytes (at mkfs)\n", in->in_sectsize);
	printf("size:               %llu blocks (%s)\n", (unsigned long long)in->in_dblocks,
	       tool_format_size(in->in_dblocks * in->in_blocksize, a, sizeof(a)));
	printf("log:                blocks %llu..%llu (%u blocks, %s)\n",
	       (unsigned long long)in->in_logstart,
	       (unsigned long long)(in->in_logstart + in->in_logblocks - 1), in->in_logblocks,
	       tool_format_size((u64)in->in_logblocks * in->in_blocksize, a, sizeof(a)));
	printf("bitmap:             blocks %llu..%llu (%u blocks)\n",
	       (unsigned long long)in->in_bmapstart,
	       (unsigned long long)(in->in_bmapstart + in->in_bmapblocks - 1),
	       in->in_bmapblocks);
	printf("data:               blocks %llu..%llu (%llu blocks)\n",
	       (unsigned long long)in->in_datastart, (unsigned long long)(in->in_dblocks - 1),
	       (unsigned long long)data);
	printf("free:               %llu blocks (%s, %.1f%% of data)\n",
	       (unsigned long long)in->in_free_blocks,
	       tool_format_size(in->in_free_blocks * in->in_blocksize, a, sizeof(a)),
	       data ? 100.0 * (double)in->in_free_blocks / (double)data : 0.0);
	printf("features compat:    %s\n",
	       tool_features(in->in_feat_compat, TOOL_FEAT_COMPAT, f, sizeof(f)));
	printf("features ro_compat: %s\n",
	       tool_features(in->in_feat_ro_compat, TOOL_FEAT_RO_COMPAT, f, sizeof(f)));
	printf("features incompat:  %s\n",
	       tool_features(in->in_feat_incompat, TOOL_FEAT_INCOMPAT, f, sizeof(f)));
	printf("features log:       %s\n",
	       tool_features(in->in_feat_log_incompat, TOOL_FEAT_LOG_INCOMPAT, f, sizeof(f)));
	printf("log tail:           %s\n", tool_format_lsn(in->in_log_tail, a, sizeof(a)));
	printf("log head:           %s\n", tool_format_lsn(in->in_log_head, b, sizeof(b)));
	printf("log epoch:          %u\n", in->in_log_epoch);
	printf("superblock seq:     %llu\n", (unsigned long long)in->in_sb_seq);
	if (clean)
		printf("log state:          clean (head = tail)\n");
	else
		printf("log state:          dirty: log needs recovery (valid records from %s to %s; the next read-write mount replays them)\n",
		       a, b);
}

/* Mount @path read-only without recovery and describe it. */
int cmd_info(int argc, char **argv)
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY,
				    .mo_name = "info" };
	struct sx_mount *mp;
	struct sx_bdev *bd;
	struct sx_info in;
	int error;

	error = tool_open_image(argc, argv, "info", &bd);
	if (error)
		return error;
	error = sx_mount(bd, &mo, &mp);
	if (error) {
		sx_bdev_destroy(bd);
		return tool_error(error, "info: cannot mount %s", argv[1]);
	}
	error = sx_get_info(mp, &in);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "info: %s", argv[1]);
	info_print(argv[1], &in);
	return 0;
}
