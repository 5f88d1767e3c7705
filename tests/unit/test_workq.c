/*
 * test_workq.c: the copy-in thread pool — every job runs exactly once at
 * any thread count and queue depth, the first error comes back, and after
 * an error nothing more is queued.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include "unit.h"
#include "util/workq.h"

#define NJOBS 10000

static atomic_uint runs[NJOBS];
static atomic_uint workers_seen;

static errcode_t count_job(void *arg, unsigned worker)
{
	size_t i = (size_t)arg;

	atomic_fetch_add(&runs[i], 1);
	atomic_fetch_or(&workers_seen, 1u << (worker % 32));
	return 0;
}

static void run_all(unsigned threads, unsigned depth)
{
	struct e3_workq *wq;

	for (size_t i = 0; i < NJOBS; i++)
		atomic_store(&runs[i], 0);
	CHECK_OK(e3_workq_create(threads, depth, &wq));
	for (size_t i = 0; i < NJOBS; i++)
		CHECK_OK(e3_workq_add(wq, count_job, (void *)i));
	CHECK_OK(e3_workq_wait(wq));
	for (size_t i = 0; i < NJOBS; i++)
		CHECK(atomic_load(&runs[i]) == 1);
	/* wait twice is harmless, and the pool can be reused after wait */
	CHECK_OK(e3_workq_wait(wq));
	CHECK_OK(e3_workq_add(wq, count_job, (void *)0));
	e3_workq_destroy(wq);
	CHECK(atomic_load(&runs[0]) == 2);
}

static void test_every_job_once_1_thread(void) { run_all(1, 1); }
static void test_every_job_once_8_threads(void) { run_all(8, 3); }
static void test_every_job_once_deep_queue(void) { run_all(4, 4096); }

static errcode_t fail_job(void *arg, unsigned worker)
{
	(void)worker;
	return (errcode_t)(size_t)arg;
}

static void test_first_error_stops_queueing(void)
{
	struct e3_workq *wq;
	errcode_t err = 0;
	int n;

	CHECK_OK(e3_workq_create(2, 2, &wq));
	CHECK_OK(e3_workq_add(wq, fail_job, (void *)(size_t)EIO));
	CHECK(e3_workq_wait(wq) == EIO);
	for (n = 0; n < 100 && !err; n++)
		err = e3_workq_add(wq, fail_job, (void *)(size_t)0);
	CHECK(err == EIO && n == 1);
	e3_workq_destroy(wq);
}

static void test_bad_arguments(void)
{
	struct e3_workq *wq;

	CHECK(e3_workq_create(0, 1, &wq) == EINVAL);
	CHECK(e3_workq_create(1, 0, &wq) == EINVAL);
}

int main(void)
{
	RUN(test_every_job_once_1_thread);
	RUN(test_every_job_once_8_threads);
	RUN(test_every_job_once_deep_queue);
	RUN(test_first_error_stops_queueing);
	RUN(test_bad_arguments);
	return unit_done();
}
