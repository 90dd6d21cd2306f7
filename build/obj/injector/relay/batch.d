build/obj/injector/relay/batch.o: injector/relay/batch.c \
 injector/relay/batch.h injector/relay/agg.h injector/preload/ring.h \
 common/ident.h build/gen/proto/trainscope.pb-c.h
injector/relay/batch.h:
injector/relay/agg.h:
injector/preload/ring.h:
common/ident.h:
build/gen/proto/trainscope.pb-c.h:
