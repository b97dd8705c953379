/* SPDX-License-Identifier: MIT */
/*
 * Corpus replay for compilers without libFuzzer: runs the target over
 * every file named on the command line (directories are walked one
 * level deep), so CI checks the corpus on every build and sanitizer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len > 0 ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int files = 0, failed = 0;
	int i;

	for (i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st))
			continue;
		if (!S_ISDIR(st.st_mode)) {
			failed += run_file(argv[i]) != 0;
			files++;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 de->d_name);
			failed += run_file(path) != 0;
			files++;
		}
		if (d)
			closedir(d);
	}
	printf("replayed %u inputs\n", files);
	printf("%u passed, %u failed\n", files - failed, failed);
	return failed != 0 || files == 0;
}
