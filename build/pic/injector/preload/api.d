build/pic/injector/preload/api.o: injector/preload/api.c \
 injector/preload/lib.h injector/preload/ring.h common/ident.h \
 injector/preload/include/trainscope.h
injector/preload/lib.h:
injector/preload/ring.h:
common/ident.h:
injector/preload/include/trainscope.h:
