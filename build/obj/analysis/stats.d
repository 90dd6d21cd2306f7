build/obj/analysis/stats.o: analysis/stats.c analysis/stats.h
analysis/stats.h:
