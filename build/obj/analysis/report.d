build/obj/analysis/report.o: analysis/report.c analysis/report.h \
 analysis/job.h analysis/failslow.h analysis/ksigma.h analysis/params.h \
 common/config.h analysis/dbscan.h common/tsclock.h
analysis/report.h:
analysis/job.h:
analysis/failslow.h:
analysis/ksigma.h:
analysis/params.h:
common/config.h:
analysis/dbscan.h:
common/tsclock.h:
