# cmake -DIN=page.html -DOUT=page_html.c [-DNAME=sym] -P embed.cmake: the file as
# a C byte array NAME (default srv_page_html) of NAME_len bytes, followed by a
# terminating zero byte that NAME_len does not count. Also used for the model
# catalogue (tools/download).
if(NOT DEFINED NAME)
    set(NAME srv_page_html)
endif()
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" body "${body}")
get_filename_component(src ${IN} NAME)
file(WRITE ${OUT} "/* generated from ${src} by embed.cmake */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${body}0x00};\n"
     "const size_t ${NAME}_len = ${len};\n")
