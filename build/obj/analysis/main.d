build/obj/analysis/main.o: analysis/main.c analysis/analyzer.h \
 common/buf.h build/gen/proto/trainscope.pb-c.h analysis/job.h \
 analysis/failslow.h analysis/ksigma.h analysis/params.h common/config.h \
 analysis/dbscan.h analysis/params.h common/httpd.h common/buf.h \
 analysis/k8s.h common/kube.h analysis/otlp.h common/log.h \
 common/signals.h common/natsw.h common/tsclock.h
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
analysis/k8s.h:
common/kube.h:
analysis/otlp.h:
common/log.h:
common/signals.h:
common/natsw.h:
common/tsclock.h:
