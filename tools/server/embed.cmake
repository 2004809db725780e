# cmake -DIN=page.html -DOUT=page_html.c -P embed.cmake: the file as a C byte
# array srv_page_html (srv_page_html_len bytes, no terminator).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from page.html by embed.cmake */\n#include <stddef.h>\n"
     "const unsigned char srv_page_html[] = {\n${body}0x00};\n"
     "const size_t srv_page_html_len = ${len};\n")
