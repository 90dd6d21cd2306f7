build/obj/injector/relay/main.o: injector/relay/main.c common/httpd.h \
 common/buf.h common/log.h common/signals.h injector/relay/relay.h \
 common/buf.h common/natsw.h
common/httpd.h:
common/buf.h:
common/log.h:
common/signals.h:
injector/relay/relay.h:
common/buf.h:
common/natsw.h:
