build/obj/analysis/analyzer.o: analysis/analyzer.c analysis/analyzer.h \
 common/buf.h build/gen/proto/trainscope.pb-c.h analysis/job.h \
 analysis/failslow.h analysis/ksigma.h analysis/params.h common/config.h \
 analysis/dbscan.h analysis/params.h common/httpd.h common/buf.h \
 common/log.h analysis/report.h analysis/job.h
analysis/analyzer.h:
common/buf.h:
build/gen/proto/trainscope.pb-c.h:
analysis/job.h:
analysis/failslow.h:
analysis/ksigma.h:
analysis/params.h:
common/config.h:
analysis/dbscan.h:
analysis/params.h:
common/httpd.h:
common/buf.h:
common/log.h:
analysis/report.h:
analysis/job.h:
