build/obj/injector/relay/relay.o: injector/relay/relay.c \
 injector/relay/relay.h common/buf.h common/natsw.h injector/relay/agg.h \
 injector/preload/ring.h common/ident.h injector/relay/batch.h \
 common/httpd.h common/buf.h common/log.h common/tsclock.h
injector/relay/relay.h:
common/buf.h:
common/natsw.h:
injector/relay/agg.h:
injector/preload/ring.h:
common/ident.h:
injector/relay/batch.h:
common/httpd.h:
common/buf.h:
common/log.h:
common/tsclock.h:
