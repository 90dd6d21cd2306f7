build/obj/e2e/workload/workload.o: e2e/workload/workload.c \
 injector/preload/include/trainscope.h
injector/preload/include/trainscope.h:
