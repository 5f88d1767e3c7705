/*
 * workq.c: the thread pool behind copy-in (see workq.h). One mutex guards
 * the queue; workers block every signal so that the tool's main thread is
 * the one that sees SIGINT and friends.
 *
 * Wake-ups are what a hand-off costs on a busy machine: a thread woken
 * while the waker still holds the lock runs into it and sleeps again, and
 * the waker, when it lets the lock go, is preempted by the thread it
 * wakes. At e3cp -j2 on tmpfs that was the commonest way a worker lost
 * its core (bench/results/copyin-profile.md, 22:25). So signals go out
 * after the unlock, only to threads that wait, and a producer waiting for
 * room is woken when half the queue is free, not at every job taken: it
 * then queues several jobs per wake-up.
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
	unsigned adders_waiting;	/* [lock] in e3_workq_add, for room */
	unsigned workers_waiting;	/* [lock] idle workers */
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
		int wake;

		while (wq->count == 0 && !wq->stopping) {
			wq->workers_waiting++;
			pthread_cond_wait(&wq->not_empty, &wq->lock);
			wq->workers_waiting--;
		}
		if (wq->count == 0)
			break;	/* stopping and drained */
		job = wq->ring[wq->head];
		wq->head = (wq->head + 1) % wq->max_queued;
		wq->count--;
		wq->running++;
		/* half the queue free: the producer, woken now, queues
		 * several jobs before it waits again */
		wake = wq->adders_waiting &&
		       wq->count <= wq->max_queued / 2;
		pthread_mutex_unlock(&wq->lock);
		if (wake)
			pthread_cond_signal(&wq->not_full);

		err = job.fn(job.arg, id);

		pthread_mutex_lock(&wq->lock);
		if (err && !wq->first_err) {
			wq->first_err = err;
			/* a producer waiting for room gives up now */
			pthread_cond_broadcast(&wq->not_full);
		}
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
	int wake = 0;

	pthread_mutex_lock(&wq->lock);
	while (wq->count == wq->max_queued && !wq->first_err) {
		wq->adders_waiting++;
		pthread_cond_wait(&wq->not_full, &wq->lock);
		wq->adders_waiting--;
	}
	err = wq->first_err;
	if (!err) {
		wq->ring[(wq->head + wq->count) % wq->max_queued] =
			(struct job){ .fn = fn, .arg = arg };
		wq->count++;
		wake = wq->workers_waiting > 0;
	}
	pthread_mutex_unlock(&wq->lock);
	if (wake)
		pthread_cond_signal(&wq->not_empty);
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
