build/pic/injector/preload/ring.o: injector/preload/ring.c \
 injector/preload/ring.h common/ident.h
injector/preload/ring.h:
common/ident.h:
