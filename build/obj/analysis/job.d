build/obj/analysis/job.o: analysis/job.c analysis/job.h \
 analysis/failslow.h analysis/ksigma.h analysis/params.h common/config.h \
 analysis/dbscan.h analysis/dbscan.h common/log.h analysis/otlp.h \
 analysis/stats.h
analysis/job.h:
analysis/failslow.h:
analysis/ksigma.h:
analysis/params.h:
common/config.h:
analysis/dbscan.h:
analysis/dbscan.h:
common/log.h:
analysis/otlp.h:
analysis/stats.h:
