/*
 * check_problem.c: the problem table — every finding's code, stable id,
 * pass, message template and what -p/-y do about it. The tool words
 * "would fix"/"fixed" from here, so the text lives in one place.
 */
#include <stdio.h>
#include <string.h>
#include <inttypes.h>

#include "check.h"

#define P(c, id, pass, fix, msg, fixmsg) { c, id, pass, fix, msg, fixmsg }

static const struct e3_problem problems[] = {
/* pass 1 */
P(E3P_SB_UNUSABLE, "sb_unusable", 1, E3_FIX_YES,
  "primary superblock or group descriptors unusable ({name}), using backup superblock {blk}",
  "rewrite the primary from the backup"),
P(E3P_SB_FEATURE_EXT4, "sb_feature_unsupported", 1, E3_FIX_NEVER,
  "filesystem has feature {name}, which ext2/ext3 do not have", NULL),
P(E3P_SB_GEOMETRY, "sb_geometry", 1, E3_FIX_NEVER,
  "superblock geometry is invalid: {name}", NULL),
P(E3P_SB_FREE_BLOCKS, "sb_free_blocks", 1, E3_FIX_PREEN,
  "free blocks count wrong ({num}, counted={num2})", "fix"),
P(E3P_SB_FREE_INODES, "sb_free_inodes", 1, E3_FIX_PREEN,
  "free inodes count wrong ({num}, counted={num2})", "fix"),
P(E3P_SB_INODES_COUNT, "sb_inodes_count", 1, E3_FIX_NEVER,
  "inodes count {num} is not inodes per group x groups ({num2})", NULL),
P(E3P_SB_FIRST_DATA_BLOCK, "sb_first_data_block", 1, E3_FIX_NEVER,
  "first data block {num} is wrong for the block size (expected {num2})", NULL),
/* check_relocate.c: moved inside the group, as e2fsck relocates them */
P(E3P_GD_BLOCK_BITMAP, "gd_block_bitmap", 1, E3_FIX_YES,
  "group {grp}'s block bitmap at {blk} is not in the group",
  "relocate it (a new bitmap, rebuilt)"),
P(E3P_GD_INODE_BITMAP, "gd_inode_bitmap", 1, E3_FIX_YES,
  "group {grp}'s inode bitmap at {blk} is not in the group",
  "relocate it (a new bitmap, rebuilt)"),
P(E3P_GD_INODE_TABLE, "gd_inode_table", 1, E3_FIX_YES,
  "group {grp}'s inode table at {blk} is not in the group: its inodes cannot be read",
  "relocate it (a zeroed table: the group's inodes are lost)"),
P(E3P_GD_OVERLAP, "gd_overlap", 1, E3_FIX_YES,
  "group {grp}'s {name} at {blk2} conflicts with other group metadata at {blk}",
  "relocate it"),
P(E3P_SB_ERROR_STATE, "sb_error_state", 1, E3_FIX_PREEN,
  "filesystem is marked as having errors", "clear the error state"),
P(E3P_SB_JOURNAL_FIELDS, "sb_journal_fields", 1, E3_FIX_PREEN,
  "journal fields set but the has_journal feature is clear", "clear them"),
P(E3P_SB_LAST_ORPHAN, "sb_orphan_list", 1, E3_FIX_PREEN,
  "orphan list starts at inode {ino}", "release the orphans"),
P(E3P_SB_REV_LEVEL, "sb_rev_level", 1, E3_FIX_NEVER,
  "unknown revision level {num}", NULL),
/* e2fsck -n says so and goes on (exit 0); -p and -y stop (check_super.c) */
P(E3P_SB_TRUNCATED, "sb_image_short", 1, E3_FIX_NEVER,
  "the superblock says {num} blocks, the image holds {num2}: superblock or image truncated", NULL),
/* pass 2 */
P(E3P_INO_BAD_MODE, "inode_bad_mode", 2, E3_FIX_YES,
  "inode {ino} has an invalid mode (0{numo})", "clear the inode"),
P(E3P_INO_RESERVED_MODE, "inode_reserved_mode", 2, E3_FIX_YES,
  "reserved inode {ino} has a bad mode (0{numo})", "clear the mode"),
P(E3P_INO_DTIME, "inode_dtime", 2, E3_FIX_PREEN,
  "inode {ino} is in use but has dtime set", "clear dtime"),
P(E3P_INO_ILLEGAL_BLOCK, "inode_illegal_block", 2, E3_FIX_YES,
  "inode {ino} has illegal block {blk} at logical {num}", "clear the pointer"),
P(E3P_INO_METADATA_BLOCK, "inode_block_in_metadata", 2, E3_FIX_YES,
  "inode {ino} claims block {blk}, which holds group metadata", "clone it"),
P(E3P_INO_DUP_BLOCK, "inode_dup_block", 2, E3_FIX_YES,
  "block {blk} is claimed by inode {ino} and by inode {ino2}", "clone it"),
P(E3P_INO_I_BLOCKS, "inode_i_blocks", 2, E3_FIX_PREEN,
  "inode {ino}, i_blocks is {num}, should be {num2}", "fix"),
P(E3P_INO_I_SIZE, "inode_i_size", 2, E3_FIX_PREEN,
  "inode {ino}, i_size is {num}, should be {num2}", "fix"),
P(E3P_INO_BAD_IND, "inode_bad_indirect", 2, E3_FIX_YES,
  "inode {ino} has an illegal indirect block {blk}", "clear the pointer"),
P(E3P_INO_TOO_MANY_BAD, "inode_too_many_bad", 2, E3_FIX_YES,
  "inode {ino} has {num} illegal blocks", "clear the inode"),
P(E3P_INO_FAST_SYMLINK, "inode_fast_symlink", 2, E3_FIX_YES,
  "symlink {ino} is invalid (size {num})", "clear the inode"),
P(E3P_INO_DEVICE, "inode_device", 2, E3_FIX_YES,
  "device inode {ino} has block pointers or flags set", "clear the inode"),
P(E3P_INO_ORPHAN, "inode_orphan", 2, E3_FIX_PREEN,
  "inode {ino} on the orphan list is bad ({name})", "clear the orphan list"),
P(E3P_INO_EA_BLOCK_RANGE, "inode_ea_block_range", 2, E3_FIX_YES,
  "inode {ino} has an illegal extended attribute block {blk}", "clear it"),
P(E3P_INO_EA_HEADER, "inode_ea_header", 2, E3_FIX_YES,
  "extended attribute block {blk} of inode {ino} has a bad header", "clear it"),
P(E3P_INO_EA_REFCOUNT, "inode_ea_refcount", 2, E3_FIX_YES,
  "extended attribute block {blk} has reference count {num}, should be {num2}", "fix"),
P(E3P_INO_EA_ENTRY, "inode_ea_entry", 2, E3_FIX_YES,
  "extended attribute block {blk} of inode {ino} has a bad entry", "clear it"),
P(E3P_INO_DIR_SIZE, "inode_dir_size", 2, E3_FIX_PREEN,
  "directory {ino} has size {num}, not a multiple of the block size", "fix"),
P(E3P_INO_DIR_HOLE, "inode_dir_hole", 2, E3_FIX_YES,
  "directory {ino} has a hole at block {num}", "fill it"),
P(E3P_INO_FLAGS_EXTENTS, "inode_flags_ext4", 2, E3_FIX_YES,
  "inode {ino} has ext4-only flags (0x{numx})", "clear the inode"),
P(E3P_INO_BAD_SYMLINK_SIZE, "inode_symlink_size", 2, E3_FIX_YES,
  "symlink {ino} has size {num} but {num2} blocks", "clear the inode"),
P(E3P_INO_IMAGIC, "inode_imagic", 2, E3_FIX_PREEN,
  "inode {ino} has the imagic flag set", "clear the flag"),
P(E3P_INO_RESIZE_BAD, "inode_resize_bad", 2, E3_FIX_YES,
  "resize inode is invalid ({name})", "recreate it"),
P(E3P_INO_JOURNAL_MODE, "inode_journal_bad", 2, E3_FIX_NEVER,
  "journal inode {ino} is not a regular file", NULL),
P(E3P_INO_ZERO_DTIME, "inode_zero_dtime", 2, E3_FIX_PREEN,
  "deleted inode {ino} has zero dtime", "set dtime"),
P(E3P_INO_FIELD, "inode_field_nonzero", 2, E3_FIX_YES,
  "inode {ino}: {name} is {num}, should be zero", "clear it"),
P(E3P_INO_LOW_DTIME, "inode_low_dtime", 2, E3_FIX_PREEN,
  "inode {ino} was part of a corrupted orphan list (dtime {num})", "fix dtime"),
/* pass 3 */
P(E3P_INO_FLAG, "inode_flag", 2, E3_FIX_YES,
  "inode {ino} has flag {name} (0x{numx}), which this filesystem does not use", "clear the flag"),
P(E3P_INO_EXTRA_ISIZE, "inode_extra_isize", 2, E3_FIX_YES,
  "inode {ino} has an invalid extra size ({num})", "fix it"),
P(E3P_INO_EA_IN_INODE, "inode_ea_in_inode", 2, E3_FIX_YES,
  "inode {ino} has a bad extended attribute in the inode", "clear the attributes"),
P(E3P_INO_SPECIAL_SIZE, "inode_special_size", 2, E3_FIX_YES,
  "special (device/socket/fifo) inode {ino} has non-zero size {num}", "clear the size"),
/* e2fsck: "Journal inode is not in use, but contains data. Clear?",
 * cleared by -p too (seen: e2fsck -fp says CLEARED) */
P(E3P_INO_JOURNAL_NOT_CLEAR, "journal_inode_not_clear", 2, E3_FIX_PREEN,
  "journal inode {ino} is not in use, but contains data", "clear it"),
P(E3P_INO_QUOTA_NOT_CLEAR, "quota_inode_not_clear", 2, E3_FIX_YES,
  "quota inode {ino} is not in use, but contains data", "clear it"),
P(E3P_INO_EA_NO_FEATURE, "inode_ea_no_feature", 2, E3_FIX_YES,
  "inode {ino} has extended attribute block {blk}, but ext_attr is not set", "clear it"),
P(E3P_BB_INODE_INVALID, "badblocks_inode_invalid", 2, E3_FIX_YES,
  "the bad-block inode looks invalid ({name})", "clear it"),
P(E3P_BB_ILLEGAL, "badblocks_illegal", 2, E3_FIX_YES,
  "the bad-block inode has illegal block {blk}", "drop it from the list"),
P(E3P_BB_METADATA, "badblocks_metadata", 2, E3_FIX_YES,
  "the bad-block list names block {blk}, which holds {name}", "drop it from the list"),
P(E3P_INO_DIR_EMPTY, "inode_dir_empty", 2, E3_FIX_YES,
  "inode {ino} is a zero-length directory", "clear the inode"),
P(E3P_INO_REALLY_DIR, "inode_really_dir", 2, E3_FIX_YES,
  "inode {ino} is a {name} but it looks like it is really a directory",
  "make it a directory"),
P(E3P_DIR_BAD_REC_LEN, "dir_rec_len", 3, E3_FIX_YES,
  "directory {ino} block {num}: entry at offset {num2} has a bad rec_len", "salvage the block"),
P(E3P_DIR_BAD_NAME_LEN, "dir_name_len", 3, E3_FIX_YES,
  "directory {ino} block {num}: entry at offset {num2} has a bad name_len", "salvage the block"),
P(E3P_DIR_INODE_RANGE, "dir_inode_range", 3, E3_FIX_YES,
  "entry '{name}' in directory {ino} has bad inode {ino2}", "clear the entry"),
P(E3P_DIR_INODE_UNUSED, "dir_inode_unused", 3, E3_FIX_YES,
  "entry '{name}' in directory {ino} names unused or bad inode {ino2}", "clear the entry"),
P(E3P_DIR_FILETYPE, "dir_filetype", 3, E3_FIX_YES,
  "entry '{name}' in directory {ino} has file type {num}, should be {num2}", "fix"),
P(E3P_DIR_MISSING_DOT, "dir_missing_dot", 3, E3_FIX_YES,
  "directory {ino} has no '.' entry first", "fix"),
P(E3P_DIR_MISSING_DOTDOT, "dir_missing_dotdot", 3, E3_FIX_YES,
  "directory {ino} has no '..' entry second", "fix"),
P(E3P_DIR_DUP_NAME, "dir_dup_name", 3, E3_FIX_YES,
  "entry '{name}' appears twice in directory {ino}", "rename the second"),
P(E3P_DIR_DOT_ENTRY_OTHER, "dir_dot_elsewhere", 3, E3_FIX_YES,
  "directory {ino} has a '{name}' entry after the start", "clear the entry"),
P(E3P_DIR_NAME_ZERO, "dir_name_zero", 3, E3_FIX_YES,
  "directory {ino} has an entry with an empty name", "clear the entry"),
P(E3P_DIR_LINK_TO_DIR, "dir_hard_link", 3, E3_FIX_YES,
  "entry '{name}' in directory {ino} is a second link to directory {ino2}", "clear the entry"),
P(E3P_DIR_LINK_ROOT, "dir_link_root", 3, E3_FIX_YES,
  "entry '{name}' in directory {ino} links to the root directory", "clear the entry"),
P(E3P_DIR_BAD_NAME, "dir_bad_name", 3, E3_FIX_YES,
  "entry '{name}' in directory {ino} has a '/' or NUL in its name (shown as '.')",
  "replace them by '.'"),
P(E3P_HTREE_ROOT, "htree_root", 3, E3_FIX_YES,
  "htree directory {ino} has a bad root ({name})", "clear the index"),
P(E3P_HTREE_LIMIT, "htree_limit", 3, E3_FIX_YES,
  "htree directory {ino} block {num}: limit {num2} is wrong", "clear the index"),
P(E3P_HTREE_COUNT, "htree_count", 3, E3_FIX_YES,
  "htree directory {ino} block {num}: count {num2} is wrong", "clear the index"),
P(E3P_HTREE_ORDER, "htree_order", 3, E3_FIX_YES,
  "htree directory {ino} block {num}: hashes out of order", "clear the index"),
P(E3P_HTREE_DEPTH, "htree_depth", 3, E3_FIX_YES,
  "htree directory {ino} has depth {num}", "clear the index"),
P(E3P_HTREE_BLOCK, "htree_block", 3, E3_FIX_YES,
  "htree directory {ino} points to block {num} outside the directory or twice", "clear the index"),
P(E3P_HTREE_NO_FEATURE, "htree_no_feature", 3, E3_FIX_YES,
  "directory {ino} has the index flag but dir_index is not set", "clear the flag"),
P(E3P_HTREE_HASH, "htree_hash_range", 3, E3_FIX_YES,
  "htree directory {ino} block {num}: hash {num2} outside the range its index gives", "clear the index"),
P(E3P_HTREE_UNREF, "htree_unreferenced", 3, E3_FIX_YES,
  "htree directory {ino} block {num} is not referenced by the index, or twice", "clear the index"),
P(E3P_DIR_SET_FILETYPE, "dir_filetype_unset", 3, E3_FIX_PREEN,
  "entry '{name}' in directory {ino} has no file type, should be {num2}", "set it"),
P(E3P_DIR_DOT_NUL, "dir_dot_nul", 3, E3_FIX_YES,
  "'{name}' entry in directory {ino} is not NUL-terminated", "fix"),
/* e2fsck knows an index node by its header entry (inode 0, one record
 * over the block, no name); without one it reads the block as a leaf */
P(E3P_HTREE_NODE, "htree_node", 3, E3_FIX_YES,
  "htree directory {ino} block {num} is not an index node ({name})", "clear the index"),
/* pass 4 */
P(E3P_CONN_UNREACHABLE, "dir_unconnected", 4, E3_FIX_YES,
  "directory {ino} is not reachable from the root (parent {ino2})", "connect to lost+found"),
P(E3P_CONN_DOTDOT, "dir_dotdot", 4, E3_FIX_YES,
  "'..' in directory {ino} is {ino2}, should be {num}", "fix"),
P(E3P_CONN_NO_LOSTFOUND, "no_lost_found", 4, E3_FIX_YES,
  "/lost+found not found", "create it"),
P(E3P_CONN_ROOT_NOT_DIR, "root_not_dir", 4, E3_FIX_YES,
  "root inode is not a directory", "recreate it"),
P(E3P_CONN_ROOT_MISSING, "root_missing", 4, E3_FIX_YES,
  "root inode is not in use", "recreate it"),
P(E3P_CONN_LOSTFOUND_NOT_DIR, "lost_found_not_dir", 4, E3_FIX_YES,
  "/lost+found is not a directory", "unlink it and create a directory"),
/* pass 5 */
P(E3P_REF_LINKS, "inode_link_count", 5, E3_FIX_YES,
  "inode {ino} ref count is {num}, should be {num2}", "fix"),
P(E3P_REF_UNATTACHED, "inode_unattached", 5, E3_FIX_YES,
  "unattached inode {ino} (links {num})", "connect to lost+found"),
P(E3P_REF_UNATTACHED_EMPTY, "inode_unattached_empty", 5, E3_FIX_YES,
  "unattached zero-length inode {ino}", "clear it"),
P(E3P_REF_DIR_NLINK, "dir_nlink_missing", 5, E3_FIX_YES,
  "directory {ino} has {num} links, more than 65000, but the dir_nlink feature is not set",
  "set dir_nlink (the directory's count becomes 1)"),
/* pass 6 */
P(E3P_BMAP_BLOCK_USED, "bitmap_block_used", 6, E3_FIX_PREEN,
  "blocks {blk}-{blk2} are in use but marked free", "fix the bitmap"),
P(E3P_BMAP_BLOCK_FREE, "bitmap_block_free", 6, E3_FIX_PREEN,
  "blocks {blk}-{blk2} are free but marked in use", "fix the bitmap"),
P(E3P_BMAP_INODE_USED, "bitmap_inode_used", 6, E3_FIX_PREEN,
  "inodes {ino}-{ino2} are in use but marked free", "fix the bitmap"),
P(E3P_BMAP_INODE_FREE, "bitmap_inode_free", 6, E3_FIX_PREEN,
  "inodes {ino}-{ino2} are free but marked in use", "fix the bitmap"),
P(E3P_BMAP_GROUP_FREE_BLOCKS, "group_free_blocks", 6, E3_FIX_PREEN,
  "free blocks count wrong for group {grp} ({num}, counted={num2})", "fix"),
P(E3P_BMAP_GROUP_FREE_INODES, "group_free_inodes", 6, E3_FIX_PREEN,
  "free inodes count wrong for group {grp} ({num}, counted={num2})", "fix"),
P(E3P_BMAP_GROUP_DIRS, "group_dirs", 6, E3_FIX_PREEN,
  "directories count wrong for group {grp} ({num}, counted={num2})", "fix"),
P(E3P_BMAP_PADDING, "bitmap_padding", 6, E3_FIX_PREEN,
  "padding at the end of the {name} bitmap is not set", "fix"),
/* pass 7 */
/* e2fsck -p and -y both clear an invalid journal (or reset its
 * superblock, or restore its inode from the superblock's backup) and
 * recreate it: preen-safe. Unknown features stay untouched, as e2fsck
 * leaves them (-p stops, -y aborts). */
P(E3P_JNL_INODE_BAD, "journal_inode", 7, E3_FIX_PREEN,
  "journal inode is invalid ({name})", "clear and recreate the journal"),
P(E3P_JNL_SB_BAD, "journal_superblock", 7, E3_FIX_PREEN,
  "journal superblock is invalid ({name})", "clear and recreate the journal"),
P(E3P_JNL_PENDING, "journal_needs_recovery", 7, E3_FIX_PREEN,
  "journal needs recovery (log starts at {num}, sequence {num2})", "replay it"),
P(E3P_JNL_DATA_NO_RECOVER, "journal_data_no_recover", 7, E3_FIX_YES,
  "needs_recovery flag is clear, but the journal has data", "replay it"),
P(E3P_JNL_UNSUPPORTED, "journal_unsupported", 7, E3_FIX_NEVER,
  "journal has unsupported features ({name})", NULL),
P(E3P_JNL_REPLAYED, "journal_replayed", 7, E3_FIX_PREEN,
  "journal replayed: {num} transactions, {num2} blocks", "replay"),
P(E3P_JNL_EXTERNAL, "journal_external", 7, E3_FIX_NEVER,
  "filesystem has an external journal, which e3fsck does not check", NULL),
P(E3P_JNL_RECREATED, "journal_recreated", 7, E3_FIX_PREEN,
  "journal recreated: {num} blocks ({num2} KiB)", "recreate"),
/* no error: the filesystem is a valid one without a journal */
P(E3P_JNL_NOT_RECREATED, "journal_not_recreated", 7, E3_FIX_NEVER,
  "the invalid journal was cleared but not recreated ({name})", NULL),
/* the replay wrote what it could and emptied the log; the rounds that
 * follow check the result (e2fsck: "Journal corrupted", then a full check) */
P(E3P_JNL_REPLAY_STOPPED, "journal_replay_stopped", 7, E3_FIX_PREEN,
  "journal replay stopped early ({name}); the rest of the log was dropped",
  "replay what was committed"),
P(E3P_JNL_OLD_STYLE, "journal_old_style", 7, E3_FIX_PREEN,
  "journal is in ordinary inode {ino} (an old-style /.journal)",
  "move it to inode 8"),
/* as e2fsck: the error is why the check runs, and clearing it is no
 * repair of its own (e2fsck -fy clears s_errno and exits 0) */
P(E3P_JNL_ERRNO, "journal_errno", 7, E3_FIX_PREEN,
  "journal superblock records error {num} (the journal was aborted)",
  "clear it"),
/* the log is kept: replayed with the journal inode's geometry, as
 * e2fsck -fy replays it (a failed replay falls back to recreating) */
P(E3P_JNL_SB_GEOMETRY, "journal_superblock_geometry", 7, E3_FIX_PREEN,
  "journal superblock is invalid ({name})",
  "take s_first and s_maxlen from the journal inode and replay the log"),
/* pass 8 */
P(E3P_LAYOUT_NONCONTIG, "layout_noncontig", 8, E3_FIX_NEVER,
  "{num} files non-contiguous ({name}%), over the limit", NULL),
P(E3P_LAYOUT_RUNS, "layout_runs", 8, E3_FIX_NEVER,
  "inode {ino} ({name}) has {num} runs, over the limit {num2}", NULL),
P(E3P_LAYOUT_EXCESS, "layout_excess_runs", 8, E3_FIX_NEVER,
  "inode {ino} ({name}) has {num} excess runs, over the limit {num2}", NULL),
};

const struct e3_problem *e3_problem(int code)
{
	size_t lo = 0, hi = sizeof(problems) / sizeof(problems[0]);

	while (lo < hi) {	/* the table is sorted by code */
		size_t mid = (lo + hi) / 2;

		if (problems[mid].code == code)
			return &problems[mid];
		if (problems[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static size_t put(char *buf, size_t len, size_t at, const char *s)
{
	size_t n = strlen(s);

	if (at < len) {
		size_t room = len - at - 1;

		memcpy(buf + at, s, n < room ? n : room);
		buf[at + (n < room ? n : room)] = 0;
	}
	return at + n;
}

static void field(const struct e3_finding *f, const char *key, size_t klen,
		  char *out, size_t outlen)
{
#define K(s) (klen == sizeof(s) - 1 && !memcmp(key, s, klen))
	if (K("ino"))
		snprintf(out, outlen, "%u", f->ino);
	else if (K("ino2"))
		snprintf(out, outlen, "%u", f->ino2);
	else if (K("blk"))
		snprintf(out, outlen, "%llu", (unsigned long long)f->blk);
	else if (K("blk2"))
		snprintf(out, outlen, "%llu", (unsigned long long)f->blk2);
	else if (K("num"))
		snprintf(out, outlen, "%" PRIu64, f->num);
	else if (K("numo"))
		snprintf(out, outlen, "%" PRIo64, f->num);
	else if (K("numx"))
		snprintf(out, outlen, "%" PRIx64, f->num);
	else if (K("num2"))
		snprintf(out, outlen, "%" PRIu64, f->num2);
	else if (K("grp"))
		snprintf(out, outlen, "%u", f->group);
	else if (K("name"))
		snprintf(out, outlen, "%s", f->name ? f->name : "");
	else
		snprintf(out, outlen, "?");
#undef K
}

size_t e3_finding_format(const struct e3_finding *f, char *buf, size_t len)
{
	const struct e3_problem *p = e3_problem(f->code);
	const char *s, *close;
	char tmp[300];
	size_t at = 0;

	if (len)
		buf[0] = 0;
	if (!p) {
		snprintf(tmp, sizeof(tmp), "unknown problem %d", f->code);
		return put(buf, len, 0, tmp);
	}
	for (s = p->msg; *s; s++) {
		if (*s == '{' && (close = strchr(s, '}'))) {
			field(f, s + 1, close - s - 1, tmp, sizeof(tmp));
			at = put(buf, len, at, tmp);
			s = close;
			continue;
		}
		tmp[0] = *s;
		tmp[1] = 0;
		at = put(buf, len, at, tmp);
	}
	return at;
}
