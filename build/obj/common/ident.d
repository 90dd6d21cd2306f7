build/obj/common/ident.o: common/ident.c common/ident.h
common/ident.h:
