/*
 * workq.h: a small thread pool (STYLE habit 13) — create, add, wait,
 * destroy. Jobs are run by N workers in FIFO order; the queue is bounded so
 * a fast producer blocks instead of holding unbounded work in memory.
 */
#ifndef E3_WORKQ_H
#define E3_WORKQ_H

#include <ext2fs/ext2fs.h>

struct e3_workq;

/* A job's function. Its return value, if nonzero, is remembered (the
 * first one wins) and handed back by e3_workq_wait. */
typedef errcode_t (*e3_work_fn)(void *arg, unsigned worker);

/* nthreads workers (>= 1), at most max_queued jobs waiting (>= 1). */
errcode_t e3_workq_create(unsigned nthreads, unsigned max_queued,
			  struct e3_workq **ret);
/* Queues fn(arg); blocks while the queue is full (a blocked caller goes
 * on once half of it is free). Once a job has failed,
 * queues nothing more and returns that job's error (fn is not called, and
 * arg stays the caller's). */
errcode_t e3_workq_add(struct e3_workq *wq, e3_work_fn fn, void *arg);
/* Waits until every queued job has run; returns the first job error. */
errcode_t e3_workq_wait(struct e3_workq *wq);
/* Waits, stops the workers and frees. */
void e3_workq_destroy(struct e3_workq *wq);

#endif
