build/obj/common/natsw.o: common/natsw.c common/natsw.h common/log.h
common/natsw.h:
common/log.h:
