/*
 * unit.h: a tiny TAP-emitting harness for the C unit tests. Each RUN()
 * prints "ok N - name" or "not ok N - name" (with the failed checks on
 * stderr); tests/run.sh counts the lines.
 *
 *   static void test_x(void) { CHECK(1 + 1 == 2); }
 *   int main(void) { RUN(test_x); return unit_done(); }
 *
 * SKIP(reason) is for what the project cannot change (no user xattrs on
 * /tmp); a test that failed a CHECK before it skipped is still "not ok".
 * FAIL(reason) ends a test as failed: a setup step that must work (mke2fs,
 * a temporary file) and did not.
 *
 * The helpers the tests run through system() (mke2fs, e2fsck, debugfs)
 * live in /sbin or /usr/sbin, which a Debian user's PATH lacks: PATH gets
 * them appended before main() runs, whoever starts the test.
 */
#ifndef E3_UNIT_H
#define E3_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_n, unit_failed_tests, unit_failed_checks;
static const char *unit_skip_reason;

#define CHECK(cond) do { \
	if (!(cond)) { \
		unit_failed_checks++; \
		fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

/* CHECK_ERR(call): the errcode_t call must return 0. */
#define CHECK_OK(call) do { \
	long unit_e_ = (long)(call); \
	if (unit_e_) { \
		unit_failed_checks++; \
		fprintf(stderr, "  %s:%d: %s returned %ld\n", __FILE__, __LINE__, #call, unit_e_); \
	} \
} while (0)

#define SKIP(reason) do { unit_skip_reason = (reason); return; } while (0)

#define FAIL(reason) do { \
	unit_failed_checks++; \
	fprintf(stderr, "  %s:%d: %s\n", __FILE__, __LINE__, (reason)); \
	return; \
} while (0)

__attribute__((constructor)) static void unit_sbin_path(void)
{
	const char *p = getenv("PATH");
	char buf[4096];

	if (!p || !*p)
		p = "/usr/local/bin:/usr/bin:/bin";
	if (strstr(p, "/usr/sbin") && strstr(p, ":/sbin"))
		return;
	snprintf(buf, sizeof(buf), "%s:/usr/sbin:/sbin", p);
	setenv("PATH", buf, 1);
}

static inline void unit_run(const char *name, void (*fn)(void))
{
	int before = unit_failed_checks;

	unit_skip_reason = NULL;
	fn();
	unit_n++;
	if (unit_failed_checks != before) {
		unit_failed_tests++;
		if (unit_skip_reason)
			printf("not ok %d - %s (failed checks, then skipped: %s)\n",
			       unit_n, name, unit_skip_reason);
		else
			printf("not ok %d - %s\n", unit_n, name);
	} else if (unit_skip_reason)
		printf("ok %d - %s # skip %s\n", unit_n, name, unit_skip_reason);
	else
		printf("ok %d - %s\n", unit_n, name);
	fflush(stdout);
}

#define RUN(fn) unit_run(#fn, fn)

static inline int unit_done(void)
{
	printf("1..%d\n", unit_n);
	return unit_failed_tests ? 1 : 0;
}

#endif
