#!/usr/bin/env bats
# tests/build.bats: the installed library is usable — make install into a
# DESTDIR, then a program using only the installed header and e3img.pc
# builds, links and makes an image that e2fsck calls clean.

load helper

setup() {
	T=$(mktemp -d /tmp/build-bats.XXXXXX)
}

teardown() {
	rm -rf "$T"
}

@test "make install honours DESTDIR and prefix; the installed header, library and pkg-config file build a working program" {
	run make -C "$E3_TOP" install prefix=/opt/e3 DESTDIR="$T/stage"
	assert_status 0
	for f in sbin/e3mkfs sbin/e3cp sbin/e3fsck lib/libe3img.a \
		 include/e3img/e3img.h include/e3img/e3_err.h \
		 share/man/man8/e3mkfs.8 share/man/man8/e3cp.8 share/man/man8/e3fsck.8; do
		[ -f "$T/stage/opt/e3/$f" ] || { echo "missing $f" >&2; return 1; }
	done
	pc=$(find "$T/stage" -name e3img.pc)
	[ -n "$pc" ]
	cat > "$T/use.c" <<'C'
#include <stdio.h>
#include <e3img.h>
int main(int argc, char **argv)
{
	e3_image_t *img;
	ext2_ino_t dir;
	struct e3_attr a = { .mode = 040755 };
	errcode_t err;

	(void)argc;
	e3_init_errors();
	err = e3_image_open(argv[1], &(struct e3_open_opts){ .flags = E3_OPEN_WRITE }, &img);
	if (!err)
		err = e3_mkdir(img, EXT2_ROOT_INO, "made-by-use", &a, &dir);
	if (!err)
		err = e3_image_close(img);
	if (err)
		fprintf(stderr, "use: %s\n", error_message(err));
	return err != 0;
}
C
	flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$T/stage/opt/e3" --cflags --libs e3img)
	run gcc -std=c11 -o "$T/use" "$T/use.c" $flags
	assert_status 0
	"$T/stage/opt/e3/sbin/e3mkfs" -q "$T/img" 8M
	run "$T/use" "$T/img"
	assert_status 0
	assert_fsck_clean "$T/img"
	run debugfs -R "ls /" "$T/img"
	assert_output_has "made-by-use"
}
