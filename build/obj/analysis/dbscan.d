build/obj/analysis/dbscan.o: analysis/dbscan.c analysis/dbscan.h \
 analysis/stats.h
analysis/dbscan.h:
analysis/stats.h:
