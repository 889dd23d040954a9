# Driven by build.sh; plain make works too once the packages are installed.
B		?= build
CC		?= cc
MUSL_CC		?= musl-gcc
WARN		 = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
		   -Wpointer-arith -Wcast-qual
CFLAGS		?= -O2 -g
PKGS		 = lua5.4 libiso9660 libcdio libcurl jansson libarchive libpng
# One folder a layer, each with its own header; a file sees the headers of
# its own layer and those below it, nothing above (tests/layers.sh checks
# the same of every #include, and of guest/):
#   core/wire <- core/base <- staging, core/net, core/image, core/httpd <- lua
#   <- core/vm <- core/serve, core/client <- core/cmd
I_WIRE		 = -Icore/wire
I_BASE		 = $(I_WIRE) -Icore/base
I_STAGING	 = $(I_BASE) -Istaging
I_NET		 = $(I_BASE) -Icore/net
I_IMAGE		 = $(I_BASE) -Icore/image
I_HTTPD		 = $(I_BASE) -Icore/httpd
I_LUA		 = $(I_NET) -Istaging -Icore/image -Ilua
I_VM		 = $(I_LUA) -Icore/vm
I_SERVE		 = $(I_VM) -Icore/httpd -Icore/serve
I_CLIENT	 = $(I_VM) -Icore/client
I_CMD		 = $(I_SERVE) -Icore/client -Icore/cmd
INC		 = $(I_CMD) -Iguest # tests see every layer, and the agent
QSUP_DEFS	 = $(WARN) $(WERROR) -std=gnu11 -D_GNU_SOURCE \
		   $(INC) $(shell pkg-config --cflags $(PKGS))
QSUP_CFLAGS	 = $(CFLAGS) $(QSUP_DEFS)
# libslirp's .pc wants glib's headers for nothing we use: linked by name.
# libcurl, libarchive and libcrypto are loaded at their first call
# (core/base/lazylib.c).
LINK_PKGS	 = $(filter-out libcurl libarchive,$(PKGS))
QSUP_LIBS	 = -lev $(shell pkg-config --libs $(LINK_PKGS)) -lslirp -lanl \
		   -lmbedtls -lmbedx509 -lmbedcrypto -lz -lm

CORE_SRC	 = $(wildcard core/*/*.c) $(wildcard lua/*.c) $(wildcard staging/*.c)
CORE_OBJ	 = $(patsubst %.c,$(B)/obj/%.o,$(CORE_SRC)) $(B)/obj/lua/builtin.o
LIB_OBJ		 = $(filter-out $(B)/obj/core/cmd/main.o,$(CORE_OBJ))

# The agent: guest/ but the image's own tools, and the wire layer.
AGENT_SRC	 = $(filter-out guest/mkcpio.c,$(wildcard guest/*.c)) \
		   $(wildcard core/wire/*.c)
AGENT_CFLAGS	 = -Os -static -std=gnu11 -D_GNU_SOURCE $(WARN) $(WERROR) -Iguest \
		   $(I_WIRE)

UNIT_SRC	 = $(wildcard tests/unit/*_test.c)
UNIT_BIN	 = $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))

GUEST		 = $(B)/guest/vmlinux $(B)/guest/initramfs.cpio \
		   $(B)/guest/qsup-agent

# Man pages, from contrib/man/*.scd.in: their settings and commands are
# what $(B)/qsup prints (contrib/man/gen.sh), so they cannot disagree.
MAN		 = $(B)/man/qsup.1 $(B)/man/qsup-profile.5 $(B)/man/qsup-serve.8

# Where "make install" puts things (./build.sh install [PREFIX]); DESTDIR
# stages them, the binary still looks for its guest under PREFIX. The
# guest lives in lib/, not share/: a kernel and an initramfs with a static
# x86-64 agent are of one architecture, which share/ is not for (FHS).
PREFIX		?= /usr/local
BINDIR		 = $(PREFIX)/bin
LIBDIR		 = $(PREFIX)/lib/qsup
MANDIR		 = $(PREFIX)/share/man
BASHCOMPDIR	 = $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR	 = $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR	 = $(PREFIX)/share/fish/vendor_completions.d
# The web console, when build.sh built it (build/console); qsup serve finds
# it beside its binary, at ../share/qsup/console.
CONSOLEDIR	 = $(PREFIX)/share/qsup/console
INSTALLED	 = $(BINDIR)/qsup $(LIBDIR)/vmlinux $(LIBDIR)/initramfs.cpio \
		   $(LIBDIR)/qsup-agent $(MANDIR)/man1/qsup.1 \
		   $(MANDIR)/man5/qsup-profile.5 $(MANDIR)/man8/qsup-serve.8 \
		   $(BASHCOMPDIR)/qsup $(ZSHCOMPDIR)/_qsup \
		   $(FISHCOMPDIR)/qsup.fish

# The unit suites again, and the fuzz targets, under AddressSanitizer and
# UndefinedBehaviorSanitizer: their own object tree, so the normal build
# is untouched. Any UBSan finding ends the process, so a test fails.
SAN		 = -fsanitize=address,undefined -fno-sanitize-recover=all \
		   -fno-omit-frame-pointer
ASAN_CFLAGS	 = -O1 -g $(SAN) $(QSUP_DEFS)
ASAN_LIB_OBJ	 = $(patsubst $(B)/obj/%,$(B)/asan/obj/%,$(filter-out \
		   $(B)/obj/lua/builtin.o,$(LIB_OBJ))) $(B)/obj/lua/builtin.o
ASAN_UNIT_BIN	 = $(patsubst tests/unit/%.c,$(B)/asan/tests/%,$(UNIT_SRC))
# qsup itself under both, for the server's integration suite (tests/run.sh).
ASAN_CORE_OBJ	 = $(patsubst $(B)/obj/%,$(B)/asan/obj/%,$(filter-out \
		   $(B)/obj/lua/builtin.o,$(CORE_OBJ))) $(B)/obj/lua/builtin.o

# Fuzz targets: tests/fuzz/NAME_fuzz.c, each with tests/fuzz/corpus/NAME/.
# Those named agent_* link the guest agent's sources and the wire layer
# (all but guest/agent.c, the one with main(), on which nothing else
# leans); the others link qsup's core. $(B)/fuzz/NAME_fuzz runs the corpus and a bounded number of
# mutations (tests/fuzz/driver.c); $(B)/libfuzzer/NAME_fuzz is the same
# target for clang's libFuzzer (./build.sh fuzz NAME), built on demand.
FUZZ_SRC	 = $(wildcard tests/fuzz/*_fuzz.c)
FUZZ_BIN	 = $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRC))
AGENT_LIB_SRC	 = $(filter-out guest/agent.c,$(AGENT_SRC))
CLANG		?= clang
LF_SAN		 = -fsanitize=address,undefined -fno-sanitize-recover=all
LF_CFLAGS	 = -O1 -g $(LF_SAN) -fsanitize=fuzzer-no-link $(QSUP_DEFS)
LF_LIB_OBJ	 = $(patsubst $(B)/asan/%,$(B)/libfuzzer/%,$(filter-out \
		   $(B)/obj/lua/builtin.o,$(ASAN_LIB_OBJ))) $(B)/obj/lua/builtin.o

# Each layer's objects, in every object tree, with that layer's -I only.
define layer_inc
$(1)/obj/core/wire/%.o: INC = $$(I_WIRE)
$(1)/obj/core/base/%.o: INC = $$(I_BASE)
$(1)/obj/staging/%.o: INC = $$(I_STAGING)
$(1)/obj/core/net/%.o: INC = $$(I_NET)
$(1)/obj/core/image/%.o: INC = $$(I_IMAGE)
$(1)/obj/core/httpd/%.o: INC = $$(I_HTTPD)
$(1)/obj/lua/%.o: INC = $$(I_LUA)
$(1)/obj/core/vm/%.o: INC = $$(I_VM)
$(1)/obj/core/serve/%.o: INC = $$(I_SERVE)
$(1)/obj/core/client/%.o: INC = $$(I_CLIENT)
$(1)/obj/core/cmd/%.o: INC = $$(I_CMD)
endef
$(foreach t,$(B) $(B)/asan $(B)/libfuzzer,$(eval $(call layer_inc,$(t))))

.PHONY: all tests clean install uninstall FORCE
all: $(B)/qsup $(B)/qsup-agent $(GUEST) $(MAN)
tests: all $(UNIT_BIN) $(ASAN_UNIT_BIN) $(FUZZ_BIN) $(B)/asan/qsup

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(QSUP_CFLAGS) -MMD -MP -c $< -o $@

# Built-in profiles are compiled into the binary with .incbin.
$(B)/obj/lua/builtin.o: lua/builtin.S $(wildcard profiles/*.lua lua/*.lua)
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

# The API's contract is compiled in with .incbin (serve_openapi.c).
$(foreach t,$(B) $(B)/asan $(B)/libfuzzer,$(t)/obj/core/serve/serve_openapi.o): \
    docs/openapi.json

$(B)/qsup: $(CORE_OBJ)
	$(CC) $(QSUP_CFLAGS) -o $@ $(CORE_OBJ) $(QSUP_LIBS)

$(B)/man/%: contrib/man/%.scd.in contrib/man/gen.sh $(B)/qsup
	@mkdir -p $(dir $@)
	contrib/man/gen.sh $(B)/qsup $< >$@.scd
	scdoc <$@.scd >$@.tmp
	mv $@.tmp $@

# The installed binary: $(B)/qsup's objects, but guest.c's with LIBDIR
# compiled in, so that a copy taken away from its tree still finds its
# guest. One directory a LIBDIR, $(B)/prefix/LIBDIR/: installs to two
# prefixes, even at once, do not rebuild or overwrite each other's.
INST		 = $(B)/prefix$(abspath /$(LIBDIR))
$(INST)/guest.o: INC = $(I_VM)
$(INST)/guest.o: core/vm/guest.c
	@mkdir -p $(dir $@)
	$(CC) $(QSUP_CFLAGS) -DQSUP_LIBDIR='"$(LIBDIR)"' -MMD -MP -c $< -o $@

$(INST)/qsup: $(filter-out $(B)/obj/core/vm/guest.o,$(CORE_OBJ)) \
		$(INST)/guest.o
	$(CC) $(QSUP_CFLAGS) -o $@.tmp $^ $(QSUP_LIBS)
	mv $@.tmp $@

# The built-in profiles are compiled in (lua/builtin.S): nothing to install.
install: $(INST)/qsup $(B)/qsup-agent $(GUEST) $(MAN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) \
	    $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(INST)/qsup $(DESTDIR)$(BINDIR)/qsup
	install -m 0644 $(GUEST) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(B)/qsup-agent $(DESTDIR)$(LIBDIR)/qsup-agent
	install -m 0644 $(B)/man/qsup.1 $(DESTDIR)$(MANDIR)/man1/qsup.1
	install -m 0644 $(B)/man/qsup-profile.5 \
	    $(DESTDIR)$(MANDIR)/man5/qsup-profile.5
	install -m 0644 $(B)/man/qsup-serve.8 \
	    $(DESTDIR)$(MANDIR)/man8/qsup-serve.8
	install -m 0644 contrib/completion/qsup.bash \
	    $(DESTDIR)$(BASHCOMPDIR)/qsup
	install -m 0644 contrib/completion/_qsup $(DESTDIR)$(ZSHCOMPDIR)/_qsup
	install -m 0644 contrib/completion/qsup.fish \
	    $(DESTDIR)$(FISHCOMPDIR)/qsup.fish
	if [ -f $(B)/console/index.html ]; then \
		rm -rf $(DESTDIR)$(CONSOLEDIR) && \
		install -d $(DESTDIR)$(CONSOLEDIR) && \
		cp -R $(B)/console/. $(DESTDIR)$(CONSOLEDIR)/; \
	fi

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rm -rf $(DESTDIR)$(CONSOLEDIR)
	-rmdir $(DESTDIR)$(PREFIX)/share/qsup 2>/dev/null
	-rmdir $(DESTDIR)$(LIBDIR) 2>/dev/null

$(B)/qsup-agent: $(AGENT_SRC) $(wildcard guest/*.h) $(wildcard core/wire/*)
	@mkdir -p $(B)
	$(MUSL_CC) $(AGENT_CFLAGS) -o $@ $(AGENT_SRC)
	strip $@

# A suite's own helpers are its headers, tests/unit/*.h (profile_helpers.h,
# agent_helpers.h).
UNIT_HDR	 = $(wildcard tests/unit/*.h)
$(B)/tests/%_test: tests/unit/%_test.c $(UNIT_HDR) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(QSUP_CFLAGS) -o $@ $< $(LIB_OBJ) $(QSUP_LIBS) -lcriterion

$(B)/asan/qsup: $(ASAN_CORE_OBJ)
	$(CC) $(ASAN_CFLAGS) -o $@ $(ASAN_CORE_OBJ) $(QSUP_LIBS)

$(B)/asan/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -MMD -MP -c $< -o $@

# A target's prototypes come from fuzz.h, so it need not declare them.
$(B)/asan/obj/tests/fuzz/%.o $(B)/libfuzzer/obj/tests/fuzz/%.o: \
	QSUP_DEFS += -include tests/fuzz/fuzz.h

# leak_check.c makes a leak fail the test that leaked (its header says how).
$(B)/asan/tests/%_test: tests/unit/%_test.c $(UNIT_HDR) $(ASAN_LIB_OBJ) \
		$(B)/asan/obj/tests/unit/leak_check.o
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -o $@ $< $(B)/asan/obj/tests/unit/leak_check.o \
	    $(ASAN_LIB_OBJ) $(QSUP_LIBS) -lcriterion \
	    -Wl,--wrap=criterion_internal_test_main

# An archive: a target takes only the agent's files it needs.
$(B)/asan/agent.a: $(patsubst %.c,$(B)/asan/obj/%.o,$(AGENT_LIB_SRC))
	rm -f $@
	ar rcs $@ $^

# The shorter stem wins: agent_NAME_fuzz takes the first rule.
$(B)/fuzz/agent_%_fuzz: $(B)/asan/obj/tests/fuzz/agent_%_fuzz.o \
		$(B)/asan/obj/tests/fuzz/driver.o $(B)/asan/agent.a
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -o $@ $^

$(B)/fuzz/%_fuzz: $(B)/asan/obj/tests/fuzz/%_fuzz.o \
		$(B)/asan/obj/tests/fuzz/driver.o $(ASAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -o $@ $^ $(QSUP_LIBS)

$(B)/libfuzzer/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(LF_CFLAGS) -MMD -MP -c $< -o $@

$(B)/libfuzzer/agent.a: $(patsubst %.c,$(B)/libfuzzer/obj/%.o,$(AGENT_LIB_SRC))
	rm -f $@
	ar rcs $@ $^

$(B)/libfuzzer/agent_%_fuzz: $(B)/libfuzzer/obj/tests/fuzz/agent_%_fuzz.o \
		$(B)/libfuzzer/agent.a
	$(CLANG) $(LF_CFLAGS) -fsanitize=fuzzer -o $@ $^

$(B)/libfuzzer/%_fuzz: $(B)/libfuzzer/obj/tests/fuzz/%_fuzz.o $(LF_LIB_OBJ)
	$(CLANG) $(LF_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(QSUP_LIBS)

# The default guest: kernel and modules from Debian's linux-image-amd64,
# busybox, and the agent as PID 1 (guest/build-image.sh says how).
$(GUEST) &: guest/build-image.sh guest/modules.txt $(B)/qsup-agent $(B)/mkcpio
	guest/build-image.sh $(B)
	cp $(B)/qsup-agent $(B)/guest/qsup-agent.tmp
	mv $(B)/guest/qsup-agent.tmp $(B)/guest/qsup-agent

$(B)/mkcpio: guest/mkcpio.c
	@mkdir -p $(B)
	$(CC) $(CFLAGS) $(WARN) $(WERROR) -o $@ $<

clean:
	rm -rf $(B)

-include $(CORE_OBJ:.o=.d) $(wildcard $(INST)/*.d $(B)/asan/obj/*/*.d \
	   $(B)/asan/obj/*/*/*.d $(B)/libfuzzer/obj/*/*.d \
	   $(B)/libfuzzer/obj/*/*/*.d)
