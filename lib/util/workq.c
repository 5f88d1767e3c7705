/*
 * workq.c: the thread pool behind copy-in (see workq.h). One mutex guards
 * the queue; workers block every signal so that the tool's main thread is
 * the one that sees SIGINT and friends.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "workq.h"

struct job {
	e3_work_fn fn;
	void *arg;
};

struct e3_workq {
	pthread_mutex_t lock;
	pthread_cond_t not_empty;	/* a job was queued, or stopping */
	pthread_cond_t not_full;	/* a job was taken */
	pthread_cond_t idle;		/* queue empty and no job running */
	struct job *ring;		/* [lock] max_queued slots */
	unsigned max_queued;
	unsigned head, count;		/* [lock] */
	unsigned running;		/* [lock] jobs being run */
	int stopping;			/* [lock] */
	errcode_t first_err;		/* [lock] */
	unsigned nthreads;		/* threads started */
	pthread_t *threads;
};

struct worker_arg {
	struct e3_workq *wq;
	unsigned id;
};

static void *worker_main(void *p)
{
	struct worker_arg *wa = p;
	struct e3_workq *wq = wa->wq;
	unsigned id = wa->id;
	struct job job;
	errcode_t err;

	free(wa);
	pthread_mutex_lock(&wq->lock);
	for (;;) {
		while (wq->count == 0 && !wq->stopping)
			pthread_cond_wait(&wq->not_empty, &wq->lock);
		if (wq->count == 0)
			break;	/* stopping and drained */
		job = wq->ring[wq->head];
		wq->head = (wq->head + 1) % wq->max_queued;
		wq->count--;
		wq->running++;
		pthread_cond_signal(&wq->not_full);
		pthread_mutex_unlock(&wq->lock);

		err = job.fn(job.arg, id);

		pthread_mutex_lock(&wq->lock);
		if (err && !wq->first_err)
			wq->first_err = err;
		wq->running--;
		if (wq->count == 0 && wq->running == 0)
			pthread_cond_broadcast(&wq->idle);
	}
	pthread_mutex_unlock(&wq->lock);
	return NULL;
}

static void stop_workers(struct e3_workq *wq)
{
	pthread_mutex_lock(&wq->lock);
	wq->stopping = 1;
	pthread_cond_broadcast(&wq->not_empty);
	pthread_mutex_unlock(&wq->lock);
	for (unsigned i = 0; i < wq->nthreads; i++)
		pthread_join(wq->threads[i], NULL);
	wq->nthreads = 0;
}

static errcode_t start_workers(struct e3_workq *wq, unsigned n)
{
	sigset_t all, old;
	errcode_t err = 0;

	/* threads inherit the mask: block everything while creating them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < n; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));
		int rc;

		if (!wa) {
			err = ENOMEM;
			break;
		}
		wa->wq = wq;
		wa->id = i;
		rc = pthread_create(&wq->threads[i], NULL, worker_main, wa);
		if (rc) {
			free(wa);
			err = rc;
			break;
		}
		wq->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

errcode_t e3_workq_create(unsigned nthreads, unsigned max_queued,
			  struct e3_workq **ret)
{
	struct e3_workq *wq;
	errcode_t err = ENOMEM;

	if (nthreads == 0 || max_queued == 0)
		return EINVAL;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		goto out;
	wq->ring = calloc(max_queued, sizeof(*wq->ring));
	if (!wq->ring)
		goto out_wq;
	wq->threads = calloc(nthreads, sizeof(*wq->threads));
	if (!wq->threads)
		goto out_ring;
	wq->max_queued = max_queued;
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->not_empty, NULL);
	pthread_cond_init(&wq->not_full, NULL);
	pthread_cond_init(&wq->idle, NULL);
	err = start_workers(wq, nthreads);
	if (err)
		goto out_stop;
	*ret = wq;
	return 0;

out_stop:
	stop_workers(wq);
	pthread_cond_destroy(&wq->idle);
	pthread_cond_destroy(&wq->not_full);
	pthread_cond_destroy(&wq->not_empty);
	pthread_mutex_destroy(&wq->lock);
	free(wq->threads);
out_ring:
	free(wq->ring);
out_wq:
	free(wq);
out:
	return err;
}

errcode_t e3_workq_add(struct e3_workq *wq, e3_work_fn fn, void *arg)
{
	errcode_t err;

	pthread_mutex_lock(&wq->lock);
	while (wq->count == wq->max_queued && !wq->first_err)
		pthread_cond_wait(&wq->not_full, &wq->lock);
	err = wq->first_err;
	if (!err) {
		wq->ring[(wq->head + wq->count) % wq->max_queued] =
			(struct job){ .fn = fn, .arg = arg };
		wq->count++;
		pthread_cond_signal(&wq->not_empty);
	}
	pthread_mutex_unlock(&wq->lock);
	return err;
}

errcode_t e3_workq_wait(struct e3_workq *wq)
{
	errcode_t err;

	pthread_mutex_lock(&wq->lock);
	while (wq->count || wq->running)
		pthread_cond_wait(&wq->idle, &wq->lock);
	err = wq->first_err;
	pthread_mutex_unlock(&wq->lock);
	return err;
}

void e3_workq_destroy(struct e3_workq *wq)
{
	if (!wq)
		return;
	e3_workq_wait(wq);
	stop_workers(wq);
	pthread_cond_destroy(&wq->idle);
	pthread_cond_destroy(&wq->not_full);
	pthread_cond_destroy(&wq->not_empty);
	pthread_mutex_destroy(&wq->lock);
	free(wq->threads);
	free(wq->ring);
	free(wq);
}
