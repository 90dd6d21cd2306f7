build/obj/analysis/failslow.o: analysis/failslow.c analysis/failslow.h \
 analysis/stats.h
analysis/failslow.h:
analysis/stats.h:
