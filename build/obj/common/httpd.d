build/obj/common/httpd.o: common/httpd.c common/httpd.h common/buf.h \
 common/log.h
common/httpd.h:
common/buf.h:
common/log.h:
