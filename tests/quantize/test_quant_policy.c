/* The quantizer's bucket and type rules (docs/formats/gguf.md §9.5). */
#include "../../tools/quantize/policy.h"
#include "tensor/dtype.h"
#include "test_util.h"

int main(void) {
    const qp_preset *q4km = qp_find_preset("q4_k_m");
    const qp_preset *q8 = qp_find_preset("Q8_0");
    const qp_preset *f16 = qp_find_preset("F16");
    CHECK(q4km && q8 && f16);
    CHECK(qp_find_preset("Q3_K") == NULL);
    if (!q4km || !q8 || !f16) return TEST_DONE();
    CHECK(q4km->file_type == 15 && q8->file_type == 7 && f16->file_type == 1);

    CHECK(qp_classify("dec.token_embd.weight") == QP_EMBED);
    CHECK(qp_classify("enc.blocks.0.attn.q.bias") == QP_NORM);
    CHECK(qp_classify("enc.blocks.3.norm_attn.weight") == QP_NORM);
    CHECK(qp_classify("enc.final_norm.weight") == QP_NORM);
    CHECK(qp_classify("enc.pos_emb.weight") == QP_NORM);
    CHECK(qp_classify("frontend.mel_filterbank") == QP_NORM);
    CHECK(qp_classify("enc.blocks.1.conv.pointwise1.weight") == QP_CONV_PW);
    CHECK(qp_classify("enc.conv.0.weight") == QP_CONV);
    CHECK(qp_classify("enc.blocks.1.conv_depthwise.weight") == QP_CONV);
    CHECK(qp_classify("dec.blocks.0.cross_attn.out.weight") == QP_ATTN_OUT);
    CHECK(qp_classify("enc.blocks.0.ffn.fc1.weight") == QP_LINEAR);

    /* Main types, the _M overrides, and the block-size fallbacks. */
    CHECK(qp_choose_type(q4km, "enc.blocks.0.ffn.fc1.weight", 512) == TR_Q4_K);
    CHECK(qp_choose_type(q4km, "enc.blocks.0.ffn.fc1.weight", 384) == TR_Q8_0);
    CHECK(qp_choose_type(q4km, "enc.blocks.0.ffn.fc1.weight", 48) == TR_F16);
    CHECK(qp_choose_type(q4km, "enc.blocks.0.attn.out.weight", 512) == TR_Q8_0);
    CHECK(qp_choose_type(q4km, "dec.token_embd.weight", 512) == TR_Q6_K);
    CHECK(qp_choose_type(q8, "dec.token_embd.weight", 512) == TR_Q8_0);
    CHECK(qp_choose_type(q8, "enc.conv.1.weight", 3) == TR_F32);
    CHECK(qp_choose_type(f16, "enc.conv.1.weight", 3) == TR_F32);
    CHECK(qp_choose_type(q8, "enc.blocks.0.conv.pointwise2.weight", 512) == TR_F16);
    CHECK(qp_choose_type(q8, "enc.blocks.0.norm_ffn.weight", 512) == TR_F32);
    return TEST_DONE();
}
