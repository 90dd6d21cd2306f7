build/obj/common/buf.o: common/buf.c common/buf.h
common/buf.h:
