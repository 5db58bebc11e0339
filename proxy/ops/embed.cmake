# proxy/ops/embed.cmake: make a file into a C array, at build time.
#   cmake -DIN=FILE -DOUT=FILE.c -DVAR=name -P embed.cmake
# defines `const unsigned char VAR[]` (NUL-terminated, not counted) and
# `const size_t VAR_len`. CMake alone: no xxd needed on the build machine.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
# Break the one long line every 32 bytes, for compilers' and editors' sake.
string(REGEX REPLACE "((0x..,){32})" "\\1\n" arr "${arr}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}" "/* Generated from proxy/ops/${name} by proxy/ops/embed.cmake: do not edit. */\n"
  "#include <stddef.h>\n"
  "extern const unsigned char ${VAR}[];\nextern const size_t ${VAR}_len;\n"
  "const unsigned char ${VAR}[] = {\n${arr}0};\n"
  "const size_t ${VAR}_len = ${len};\n")
