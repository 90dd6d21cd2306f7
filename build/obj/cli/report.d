build/obj/cli/report.o: cli/report.c cli/cli.h analysis/report.h \
 analysis/job.h analysis/failslow.h analysis/ksigma.h analysis/params.h \
 common/config.h analysis/dbscan.h common/tsclock.h
cli/cli.h:
analysis/report.h:
analysis/job.h:
analysis/failslow.h:
analysis/ksigma.h:
analysis/params.h:
common/config.h:
analysis/dbscan.h:
common/tsclock.h:
