/*
 * godown.c: shuts a mounted ext4-driver filesystem down the way a crash
 * would leave it (EXT4_IOC_SHUTDOWN, as xfstests' "godown"), so that the
 * journal tests get logs written by the kernel: after the shutdown the
 * log keeps its committed, un-checkpointed transactions and unmount
 * checkpoints nothing.
 *   godown [--logflush] MOUNTPOINT   (--logflush commits the running
 *                                    transaction first)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define GODOWN_IOC_SHUTDOWN	_IOR('X', 125, uint32_t)
#define GODOWN_LOGFLUSH		0x1
#define GODOWN_NOLOGFLUSH	0x2

int main(int argc, char **argv)
{
	uint32_t flags = GODOWN_NOLOGFLUSH;
	const char *mnt = argv[argc - 1];
	int fd;

	if (argc == 3 && strcmp(argv[1], "--logflush") == 0)
		flags = GODOWN_LOGFLUSH;
	else if (argc != 2) {
		fprintf(stderr, "usage: godown [--logflush] MOUNTPOINT\n");
		return 2;
	}
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || ioctl(fd, GODOWN_IOC_SHUTDOWN, &flags) < 0) {
		fprintf(stderr, "godown: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}
