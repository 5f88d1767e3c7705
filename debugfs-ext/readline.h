/*
 * readline.h: line editing for the interactive shell (readline.c).
 */
#ifndef E3_DBG_READLINE_H
#define E3_DBG_READLINE_H

struct dbg_rl {
	void *handle;				/* dlopen'ed library */
	char *(*readline)(const char *prompt);	/* malloc'ed line, NULL: EOF */
	void (*add_history)(const char *line);	/* may be NULL */
};

/* Loads a readline library the way libss picks one: the colon-separated
 * names of $SS_READLINE_PATH, else libss' own list (GNU readline 8 down
 * to 4, then libedit and editline); "" or "none" turns it off. 1 when one
 * was loaded. */
int dbg_rl_load(struct dbg_rl *rl);
/* Forgets rl (the library stays loaded: readline.c says why). */
void dbg_rl_unload(struct dbg_rl *rl);

#endif
