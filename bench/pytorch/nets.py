# The networks bench/pytorch/train_steps.py and kernel_profile.py run, built one way for both: torchvision's
# image networks without weights, and BERT from its configuration (random weights, no download) as the zoo's
# bert-squad / bert-large-squad (BertForQuestionAnswering) or bert-base / bert-large (BertModel).
def vision(name):
    """The torchvision network of a zoo name, and its input size."""
    import torchvision.models as m
    if name == "inception-v3":
        return m.inception_v3(weights=None, aux_logits=False, init_weights=False), 299
    return {"resnet50": m.resnet50, "vgg16": m.vgg16, "alexnet": m.alexnet, "resnet50-v1": m.resnet50}[name](weights=None), 224

def bert(name, attn):
    """BERT-base or -large (by name) with Hugging Face's attention implementation `attn` (sdpa or eager)."""
    from transformers import BertConfig, BertForQuestionAnswering, BertModel
    big = "large" in name
    cfg = BertConfig(hidden_size=1024 if big else 768, num_hidden_layers=24 if big else 12,
                     num_attention_heads=16 if big else 12, intermediate_size=4096 if big else 3072,
                     attn_implementation=attn)
    return BertForQuestionAnswering(cfg) if "squad" in name else BertModel(cfg)
