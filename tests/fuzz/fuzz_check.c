/*
 * fuzz_check.c: libFuzzer target for the checker's image reader — each
 * input is an image (or the start of one, zero-extended to 1 MiB): it is
 * checked read-only, and must neither crash nor hang. Build and run with
 * tests/fuzz/run.sh (clang -fsanitize=fuzzer,address,undefined).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>

#include "e3img.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct e3_check_opts o;
	struct e3_check_report *r = NULL;
	char path[64];
	int fd;

	if (!init) {
		add_error_table(&et_ext2_error_table);
		add_error_table(&et_e3im_error_table);
		init = 1;
	}
	fd = memfd_create("fuzz-img", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size ||
	    (size < (1 << 20) && ftruncate(fd, 1 << 20))) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	e3_check_opts_init(&o);
	o.threads = 1;
	e3_check_image(path, &o, &r);
	e3_check_report_free(r);
	close(fd);
	return 0;
}
