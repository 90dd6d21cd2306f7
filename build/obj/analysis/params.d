build/obj/analysis/params.o: analysis/params.c analysis/params.h \
 common/config.h analysis/dbscan.h analysis/failslow.h analysis/ksigma.h
analysis/params.h:
common/config.h:
analysis/dbscan.h:
analysis/failslow.h:
analysis/ksigma.h:
