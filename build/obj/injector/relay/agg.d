build/obj/injector/relay/agg.o: injector/relay/agg.c injector/relay/agg.h \
 injector/preload/ring.h common/ident.h \
 injector/preload/include/trainscope.h
injector/relay/agg.h:
injector/preload/ring.h:
common/ident.h:
injector/preload/include/trainscope.h:
