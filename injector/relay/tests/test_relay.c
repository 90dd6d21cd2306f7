/* The relay over a real ring folder: a ring it may not open (another uid's, mode 0600)
 * is said once, in one line naming the file, its owner and mode and the fix, and counted
 * once however many scans meet it; once readable it is followed. The relay runs in a
 * child, as uid 65534 when the test is root. No NATS server is needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "injector/relay/relay.h"
#include "log.h"
#include "ring.h"
#include "injector/preload/tests/util.h"

#define NOBODY 65534
#define OTHER_UID 12345

/* A new file in the folder: the relay rescans at its next poll. */
static void nudge(const char *dir, int i)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/nudge-%d", dir, i);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
}

static void scan_and_report(struct relay *r, const char *dir, int i, int out)
{
	struct relay_stats st;

	nudge(dir, i);
	relay_poll(r, 500);
	relay_get_stats(r, &st);
	if (write(out, &st, sizeof(st)) != (ssize_t)sizeof(st))
		_exit(3);
}

/* The relay's side: three scans, then (after the parent's go) a fourth. */
static void relay_child(const char *dir, int log_fd, int out, int go)
{
	struct relay_opts o = { .ring_dir = dir, .nats = { .url = "nats://127.0.0.1:1" } };
	struct relay *r;
	char c;

	if (geteuid() == 0 && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY)))
		_exit(2);
	dup2(log_fd, 2);
	if (relay_new(&r, &o))
		_exit(4);
	for (int i = 0; i < 3; i++) {
		nudge(dir, i);
		relay_poll(r, 500);
	}
	scan_and_report(r, dir, 3, out);
	if (read(go, &c, 1) != 1)
		_exit(5);
	scan_and_report(r, dir, 4, out);
	relay_free(r);
	_exit(0);
}

static int count_lines(const char *path, const char *needle, char *line, size_t n)
{
	char buf[4096];
	int count = 0;
	FILE *f = fopen(path, "r");

	while (f && fgets(buf, sizeof(buf), f))
		if (strstr(buf, needle) && ++count == 1)
			snprintf(line, n, "%s", buf);
	if (f)
		fclose(f);
	return count;
}

/* A ring as another uid's program leaves it in a plain folder: 0600, not the relay's. */
static void foreign_ring(const char *dir, char *path, size_t n)
{
	struct ts_ident id = { .rank = 3, .world_size = 4 };
	struct ts_ring *ring;
	int lock_fd;

	assert_int_equal(ts_ring_create(dir, 64, &id, &ring, &lock_fd, path, n), 0);
	ts_ring_unmap(ring);
	close(lock_fd);
	if (geteuid() == 0)
		assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
	else
		assert_int_equal(chmod(path, 0), 0); /* its owner's own relay is refused too */
}

static void test_unreadable_ring_said_once(void **state)
{
	char dir[] = "/tmp/ts-relay-XXXXXX", logp[64], ring[4096], line[4096], want[64];
	int res[2], go[2], log_fd, status;
	struct relay_stats st;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0777), 0);
	foreign_ring(dir, ring, sizeof(ring));
	snprintf(logp, sizeof(logp), "%s.log", dir);
	log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(log_fd >= 0);
	assert_int_equal(pipe(res), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	if (pid == 0)
		relay_child(dir, log_fd, res[1], go[0]);
	close(log_fd);
	close(res[1]);
	close(go[0]);

	assert_int_equal(read(res[0], &st, sizeof(st)), sizeof(st));
	assert_int_equal(st.unreadable_rings, 1); /* four scans, one count */
	assert_int_equal(st.bad_rings, 0);
	assert_int_equal(st.producers_seen, 0);
	/* made readable (here by its owner; in a pod by the setgid folder): followed */
	assert_int_equal(chmod(ring, 0666), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(res[0], &st, sizeof(st)), sizeof(st));
	assert_int_equal(st.producers_seen, 1);
	assert_int_equal(st.unreadable_rings, 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(count_lines(logp, "cannot open ring", line, sizeof(line)), 1);
	print_message("%s", line);
	assert_non_null(strstr(line, ring));
	snprintf(want, sizeof(want), "owner uid %u", geteuid() == 0 ? OTHER_UID : geteuid());
	assert_non_null(strstr(line, want));
	assert_non_null(strstr(line, geteuid() == 0 ? "mode 0600" : "mode 0000"));
	assert_non_null(strstr(line, "fix: give the ring folder the relay's group and the setgid"));
	close(res[0]);
	close(go[1]);
	unlink(logp);
	assert_int_equal(ts_test_rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unreadable_ring_said_once),
	};
	return cmocka_run_group_tests_name("relay", tests, NULL, NULL);
}
