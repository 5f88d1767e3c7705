/*
 * readline.c: line editing for the interactive shell, loaded at run
 * time as libss loads it for ss_listen (so e3debugfs links no readline,
 * and SS_READLINE_PATH means for it what it means for debugfs). We cannot
 * use ss_listen itself: it hands a line starting with '!' to system(),
 * and libss offers no public switch for that, so shell.c runs its own
 * loop over this readline (or getline without one) and refuses '!'.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "readline.h"

/* libss' own default list, in its order */
#define RL_DEFAULT_PATH "libreadline.so.8:libreadline.so.7:libreadline.so.6:" \
	"libreadline.so.5:libreadline.so.4:libreadline.so:libedit.so.2:" \
	"libedit.so:libeditline.so.0:libeditline.so"

static int try_lib(struct dbg_rl *rl, const char *name)
{
	void *h = dlopen(name, RTLD_NOW);
	char **rl_name;

	if (!h)
		return 0;
	/* POSIX leaves object-to-function pointer casts to the platform;
	 * dlsym's own manual gives this form */
	*(void **)&rl->readline = dlsym(h, "readline");
	if (!rl->readline) {
		dlclose(h);
		return 0;
	}
	*(void **)&rl->add_history = dlsym(h, "add_history");
	/* for ~/.inputrc's "$if e3debugfs" */
	if ((rl_name = dlsym(h, "rl_readline_name")))
		*rl_name = (char *)"e3debugfs";
	rl->handle = h;
	return 1;
}

int dbg_rl_load(struct dbg_rl *rl)
{
	const char *path = getenv("SS_READLINE_PATH");
	char *copy, *name, *save = NULL;
	int ok = 0;

	memset(rl, 0, sizeof(*rl));
	if (!path)
		path = RL_DEFAULT_PATH;
	if (!*path || !strcmp(path, "none"))
		return 0;
	if (!(copy = strdup(path)))
		return 0;
	for (name = strtok_r(copy, ":", &save); name && !ok;
	     name = strtok_r(NULL, ":", &save))
		ok = try_lib(rl, name);
	free(copy);
	return ok;
}

/* The library stays mapped: its history and buffers hang off its own
 * globals, which a dlclose would unmap (leaving the sanitizer's leak
 * check to call all of it leaked), and the process ends soon after. */
void dbg_rl_unload(struct dbg_rl *rl)
{
	memset(rl, 0, sizeof(*rl));
}
