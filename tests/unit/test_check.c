/*
 * test_check.c: unit tests of the checker's library side — the problem
 * table (every code found, ids unique, templates naming known fields, a
 * fix wording exactly where a fix exists), message formatting, and one
 * check of a clean image and of a damaged one through e3_check_image.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e3img.h"
#include "unit.h"

static const char *const keys[] = { "ino", "ino2", "blk", "blk2", "num",
	"num2", "numo", "numx", "grp", "name" };

static int known_fields(const char *msg)
{
	const char *s = msg, *close;

	while ((s = strchr(s, '{'))) {
		size_t i, n;
		int ok = 0;

		close = strchr(s, '}');
		if (!close)
			return 0;
		n = close - s - 1;
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strlen(keys[i]) == n && !strncmp(s + 1, keys[i], n))
				ok = 1;
		if (!ok)
			return 0;
		s = close;
	}
	return 1;
}

static void test_problem_table(void)
{
	const struct e3_problem *seen[1000];
	int n = 0, code, i;

	for (code = 0; code < 1000; code++) {
		const struct e3_problem *p = e3_problem(code);

		if (!p)
			continue;
		CHECK(p->code == code);
		CHECK(p->pass == code / 100);
		CHECK(p->id && *p->id && p->msg && *p->msg);
		CHECK(known_fields(p->msg));
		CHECK((p->fix == E3_FIX_NEVER) == (p->fix_msg == NULL));
		for (i = 0; i < n; i++)
			CHECK(strcmp(seen[i]->id, p->id) != 0);
		seen[n++] = p;
	}
	CHECK(n >= 80);
	/* the table is searched by bisection: every code of each pass, from
	 * its first to its last, must be found (a misordered entry is not) */
	for (i = 1; i < n; i++)
		CHECK(seen[i]->pass != seen[i - 1]->pass ||
		      seen[i]->code == seen[i - 1]->code + 1);
	for (code = E3P_SB_UNUSABLE; code <= E3P_SB_REV_LEVEL; code++)
		CHECK(e3_problem(code) != NULL);
	for (code = E3P_INO_BAD_MODE; code <= E3P_INO_SPECIAL_SIZE; code++)
		CHECK(e3_problem(code) != NULL);
	for (code = E3P_DIR_BAD_REC_LEN; code <= E3P_DIR_SET_FILETYPE; code++)
		CHECK(e3_problem(code) != NULL);
	CHECK(e3_problem(E3P_INO_DUP_BLOCK) != NULL);
	CHECK(e3_problem(99) == NULL);
}

static void test_format(void)
{
	struct e3_finding f;
	char buf[128], small[16];
	size_t n;

	memset(&f, 0, sizeof(f));
	f.code = E3P_INO_DUP_BLOCK;
	f.blk = 1234;
	f.ino = 12;
	f.ino2 = 13;
	n = e3_finding_format(&f, buf, sizeof(buf));
	CHECK(!strcmp(buf, "block 1234 is claimed by inode 12 and by inode 13"));
	CHECK(n == strlen(buf));
	CHECK(e3_finding_format(&f, small, sizeof(small)) == n);
	CHECK(strlen(small) == sizeof(small) - 1);
	f.code = E3P_INO_BAD_MODE;
	f.num = 0170644;
	e3_finding_format(&f, buf, sizeof(buf));
	CHECK(strstr(buf, "(0170644)") != NULL);
}

static int sh(const char *cmd)
{
	char full[512];

	snprintf(full, sizeof(full), "PATH=/sbin:/usr/sbin:$PATH; %s >/dev/null 2>&1", cmd);
	return system(full);
}

static void test_check_image(void)
{
	char img[64];
	char cmd[256];
	struct e3_check_opts o;
	struct e3_check_report *r = NULL;

	snprintf(img, sizeof(img), "/tmp/fsck-unit-%d.img", (int)getpid());
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext3 -b 1024 -g 1024 %s 4M", img);
	if (sh(cmd))
		FAIL("mke2fs failed");
	e3_check_opts_init(&o);
	CHECK_OK(e3_check_image(img, &o, &r));
	CHECK(r && r->exit_code == 0 && r->n_findings == 0);
	CHECK(r && r->layout.inodes_used == 11 && r->layout.noncontig_permille == 0);
	e3_check_report_free(r);
	/* one wrong link count: found read-only, fixed with -y */
	snprintf(cmd, sizeof(cmd), "debugfs -w -R 'sif <11> links_count 7' %s", img);
	CHECK(sh(cmd) == 0);
	CHECK_OK(e3_check_image(img, &o, &r));
	CHECK(r && r->exit_code == E3_EXIT_UNCORRECTED && r->n_findings == 1 &&
	      r->findings[0].code == E3P_REF_LINKS && r->findings[0].num == 7 &&
	      r->findings[0].num2 == 2);
	e3_check_report_free(r);
	o.mode = E3_CHECK_YES;
	CHECK_OK(e3_check_image(img, &o, &r));
	CHECK(r && r->exit_code == E3_EXIT_FIXED && r->n_fixed == 1);
	e3_check_report_free(r);
	o.mode = E3_CHECK_READONLY;
	CHECK_OK(e3_check_image(img, &o, &r));
	CHECK(r && r->exit_code == 0);
	e3_check_report_free(r);
	unlink(img);
}

int main(void)
{
	e3_init_errors();
	RUN(test_problem_table);
	RUN(test_format);
	RUN(test_check_image);
	return unit_done();
}
