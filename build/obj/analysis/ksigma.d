build/obj/analysis/ksigma.o: analysis/ksigma.c analysis/ksigma.h
analysis/ksigma.h:
