/*
 * fault.c: the fault layer behind E3_FAULT (see fault.h). Killing the
 * process from lib/ is the one exception to "lib never exits": it is the
 * crash the tests need, and only happens when the variable asks for it
 * (stopping it, for stop-when-locked, is the same kind of exception).
 *
 * There is exactly one way out, crash(): SIGKILL, for kill:N and
 * stop-after-commit:N alike. stop-after-commit used to _exit(0), a second
 * way to end the process, and one that looked like success: a script (or
 * a caller's exit-status check) could not tell the simulated crash from a
 * finished run, and atexit handlers and stdio flushes did not run either,
 * so it was not a clean exit. SIGKILL is what a crash is: nothing after
 * that point reaches the disk, no handler runs, and the status (128 + 9,
 * 137 from a shell) says the run did not finish. The crash sweeps
 * (tests/journal.bats, bench/crash.sh: "raise N until the job exits 0")
 * keep working, since a killed run never exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "e3_err.h"

static const struct {
	const char *name;
	enum e3_fault_kind kind;
} fault_names[] = {
	{ "kill", E3_FAULT_KILL },
	{ "eio", E3_FAULT_EIO },
	{ "enospc", E3_FAULT_ENOSPC },
	{ "stop-after-commit", E3_FAULT_STOP_AFTER_COMMIT },
	{ "capture-enomem", E3_FAULT_CAPTURE_ENOMEM },
	{ "stop-when-locked", E3_FAULT_STOP_WHEN_LOCKED },
	{ "kill-commit", E3_FAULT_KILL_COMMIT },
};

errcode_t e3_fault_parse(struct e3_fault *f, const char *spec)
{
	const char *colon;
	char *end;
	unsigned long long n;

	memset(f, 0, sizeof(*f));
	if (!spec || !*spec)
		return 0;
	colon = strchr(spec, ':');
	if (!colon)
		return E3_BAD_OPTION;
	errno = 0;
	n = strtoull(colon + 1, &end, 10);
	if (errno || end == colon + 1 || n == 0)
		return E3_BAD_OPTION;
	f->count = 1;
	if (*end == '*') {
		const char *k = end + 1;

		f->count = strtoull(k, &end, 10);
		if (errno || end == k || f->count == 0)
			return E3_BAD_OPTION;
	}
	if (*end)
		return E3_BAD_OPTION;
	for (size_t i = 0; i < sizeof(fault_names) / sizeof(*fault_names); i++)
		if (strlen(fault_names[i].name) == (size_t)(colon - spec) &&
		    strncmp(spec, fault_names[i].name, colon - spec) == 0) {
			f->kind = fault_names[i].kind;
			f->at = n;
			return 0;
		}
	return E3_BAD_OPTION;
}

/* whether the n-th event is one the spec makes fail */
static int hit(const struct e3_fault *f, uint64_t n)
{
	return n >= f->at && n - f->at < f->count;
}

/* The simulated crash; see the top of the file. */
static void crash(void)
{
	raise(SIGKILL);
	abort();	/* not reached: SIGKILL cannot be caught or ignored */
}

errcode_t e3_fault_write(struct e3_fault *f)
{
	uint64_t n;

	if (!f || (f->kind != E3_FAULT_KILL && f->kind != E3_FAULT_EIO &&
		   f->kind != E3_FAULT_ENOSPC))
		return 0;
	n = __atomic_add_fetch(&f->writes, 1, __ATOMIC_SEQ_CST);
	if (!hit(f, n))
		return 0;
	switch (f->kind) {
	case E3_FAULT_KILL:
		crash();
		return 0;	/* not reached */
	case E3_FAULT_EIO:
		return EIO;
	case E3_FAULT_ENOSPC:
		return ENOSPC;
	default:
		return 0;
	}
}

errcode_t e3_fault_commit_write(struct e3_fault *f)
{
	if (!f || f->kind != E3_FAULT_KILL_COMMIT)
		return 0;
	if (hit(f, __atomic_add_fetch(&f->commit_writes, 1, __ATOMIC_SEQ_CST)))
		crash();
	return 0;
}

errcode_t e3_fault_capture(struct e3_fault *f)
{
	if (!f || f->kind != E3_FAULT_CAPTURE_ENOMEM)
		return 0;
	return hit(f, ++f->captures) ? ENOMEM : 0;
}

void e3_fault_committed(struct e3_fault *f, uint64_t n)
{
	if (f && f->kind == E3_FAULT_STOP_AFTER_COMMIT && n == f->at)
		crash();
}

void e3_fault_locked(void)
{
	struct e3_fault f;

	if (e3_fault_parse(&f, getenv("E3_FAULT")) == 0 &&
	    f.kind == E3_FAULT_STOP_WHEN_LOCKED)
		raise(SIGSTOP);
}
