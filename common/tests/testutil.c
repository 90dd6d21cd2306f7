// SPDX-License-Identifier: Apache-2.0
#include "testutil.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The aarch64 tests run under qemu-user (make arm64-test) and spawn aarch64 programs.
 * Where binfmt_misc runs those (a privileged, machine-wide setting that containers may
 * not allow), execv does; elsewhere the kernel refuses them (ENOEXEC) and they run under
 * $TS_TEST_QEMU (qemu-aarch64). LD_PRELOAD reaches the guest through -E only: the host's
 * loader would otherwise try to preload the aarch64 library into qemu itself. */
static void exec_emulated(char *const argv[])
{
	const char *qemu = getenv("TS_TEST_QEMU"), *preload = getenv("LD_PRELOAD");
	char *args[64], set[4200];
	int n = 0;

	if (!qemu || !*qemu)
		return;
	args[n++] = (char *)qemu;
	if (preload) {
		snprintf(set, sizeof(set), "LD_PRELOAD=%s", preload);
		args[n++] = "-E";
		args[n++] = set;
		unsetenv("LD_PRELOAD");
	}
	for (; *argv && n < 63; argv++)
		args[n++] = *argv;
	args[n] = NULL;
	execvp(qemu, args);
}

static void child(char *const argv[], char *const env[], int fd)
{
	dup2(fd, 1);
	close(fd);
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		if (eq && !eq[1]) {
			char name[256];
			snprintf(name, sizeof(name), "%.*s", (int)(eq - *env), *env);
			unsetenv(name);
		} else {
			putenv(*env);
		}
	}
	/* execv first: execvp would hand a foreign binary to sh as a script */
	if (strchr(argv[0], '/')) {
		execv(argv[0], argv);
		if (errno == ENOEXEC)
			exec_emulated(argv);
	}
	execvp(argv[0], argv);
	_exit(127);
}

int ts_test_spawn(char *const argv[], char *const env[], char *out, size_t n)
{
	int fds[2], status;
	size_t len = 0;
	ssize_t got;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(fds[0]);
		child(argv, env, fds[1]);
	}
	close(fds[1]);
	while ((got = read(fds[0], out + len, n - 1 - len)) > 0)
		len += (size_t)got;
	out[len] = 0;
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ts_test_find(const char *dir, const char *suffix, char *path, size_t n)
{
	size_t sl = strlen(suffix);
	struct dirent *de;
	DIR *d = opendir(dir);
	int found = 0;

	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len >= sl && !strcmp(de->d_name + len - sl, suffix) &&
		    !strstr(de->d_name, ".tmp")) {
			snprintf(path, n, "%s/%s", dir, de->d_name);
			found++;
		}
	}
	if (d)
		closedir(d);
	return found;
}

int ts_test_rmdir(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	return rmdir(dir);
}

const char *ts_test_lib(void)
{
	static char abs[4096];
	const char *p = getenv("TRAINSCOPE_LIB");

	return realpath(p ? p : "build/lib/libtrainscope.so", abs) ? abs : NULL;
}

const char *ts_test_lib_path(void)
{
	const char *p = ts_test_lib();

	if (!p)
		fail_msg("no preload library ($TRAINSCOPE_LIB or build/lib/libtrainscope.so)");
	return p;
}

int ts_test_double_path(const char *name, char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", buf, n - 1);
	char *slash;

	if (len <= 0)
		return -1;
	buf[len] = 0;
	if (!(slash = strrchr(buf, '/')))
		return -1;
	return snprintf(slash, n - (size_t)(slash - buf), "/double/%s", name) <
			       (int)(n - (size_t)(slash - buf)) ? 0 : -1;
}
