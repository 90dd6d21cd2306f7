// SPDX-License-Identifier: Apache-2.0
/* trainscope: the command-line front end. */
#include "cli.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: trainscope <command> [options]\n"
		"Finds the slow rank of a distributed training job while it runs.\n\n"
		"Commands:\n"
		"  run [opts] -- cmd   run cmd under the preload, with a relay to NATS\n"
		"  run --local -- cmd  the same on one machine: NATS and the analyzer of its own,\n"
		"                      the verdict as it runs, then the report, picture, timeline\n"
		"  report [opts]       print the analyzer's report of a job\n"
		"  timeline [opts]     write a job's Chrome/Perfetto trace (steps + host view)\n"
		"  record [opts]       save everything the stream holds for a job into a file,\n"
		"                      each message with its time, to replay it offline\n"
		"  help                this text\n\n"
		"'trainscope <command> --help' explains each command.\n");
}

int main(int argc, char **argv)
{
	/* kubectl runs kubectl-trainscope for "kubectl trainscope ...": the cluster's reports */
	const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	bool plugin = !strcmp(self, "kubectl-trainscope");

	ts_log_init("trainscope");
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1, plugin);
	if (!strcmp(argv[1], "timeline"))
		return cmd_timeline(argc - 1, argv + 1);
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	fprintf(stderr, "trainscope: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
