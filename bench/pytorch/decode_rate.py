# JPEG decode + augmentation rate of this machine's CPU cores, as models/input/cpus.yaml counts it (megapixels of
# stored image per second per core), and of its GPU's nvJPEG decoder (torchvision.io.decode_jpeg on CUDA).
# The images: a natural photograph if this Python has one (matplotlib's sample grace_hopper.jpg), re-encoded at
# ImageNet's scale (500 x 375, JPEG quality 95, about ImageNet's mean bytes per pixel), else a synthetic one.
# Pipeline per image, torchvision's ImageNet training recipe: decode (PIL), RandomResizedCrop(224),
# RandomHorizontalFlip, ToTensor, Normalize. Usage: OUT=DIR python3 bench/pytorch/decode_rate.py
import io, json, os, time, multiprocessing as mp
import numpy as np
from PIL import Image
OUT = os.environ.get("OUT", ".")

def source_image():
    try:
        import matplotlib
        p = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "sample_data", "grace_hopper.jpg")
        return Image.open(p).convert("RGB"), "matplotlib grace_hopper.jpg"
    except Exception:
        y, x = np.mgrid[0:375, 0:500]
        a = (np.sin(x / 17.0) * 60 + np.cos(y / 11.0) * 60 + 128 + np.random.default_rng(0).normal(0, 25, (375, 500)))
        img = np.stack([a, np.roll(a, 40, 1), np.roll(a, 80, 0)], -1).clip(0, 255).astype(np.uint8)
        return Image.fromarray(img), "synthetic"

def images():
    src, name = source_image()
    out = []
    for i in range(8):  # eight crops of the photograph, each resized to 500 x 375
        w, h = src.size
        box = (i * w // 40, i * h // 40, w - (7 - i) * w // 40, h - (7 - i) * h // 40)
        b = io.BytesIO(); src.crop(box).resize((500, 375), Image.BICUBIC).save(b, "JPEG", quality=95); out.append(b.getvalue())
    return out, name

def work(args):
    blobs, seconds = args
    import torch
    torch.set_num_threads(1)
    import torchvision.transforms as T
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        tf(Image.open(io.BytesIO(blobs[n % len(blobs)])).convert("RGB")); n += 1
    return n, time.perf_counter() - t0

if __name__ == "__main__":
    blobs, name = images()
    mpix = 500 * 375 / 1e6
    res = dict(image=name, megapixels=mpix, mean_bytes=sum(map(len, blobs)) / len(blobs), cores=os.cpu_count())
    try: res["cpu"] = [l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")][0]
    except Exception: pass
    n, t = work((blobs, 6.0))
    res["one_core_images_per_s"] = n / t; res["one_core_mp_per_s"] = n / t * mpix
    for procs in (os.cpu_count() // 2, os.cpu_count()):
        with mp.get_context("spawn").Pool(procs) as pool:
            r = pool.map(work, [(blobs, 6.0)] * procs)
        res[f"{procs}_processes_images_per_s"] = sum(a / b for a, b in r)
    try:  # nvJPEG on the GPU, batches of 256 encoded images decoded at once
        import torch
        from torchvision.io import decode_jpeg
        data = [torch.frombuffer(bytearray(blobs[i % len(blobs)]), dtype=torch.uint8) for i in range(256)]
        for _ in range(3): decode_jpeg(data, device="cuda")
        torch.cuda.synchronize(); t0 = time.perf_counter(); k = 0
        while time.perf_counter() - t0 < 5.0:
            decode_jpeg(data, device="cuda"); k += 1
        torch.cuda.synchronize(); dt = time.perf_counter() - t0
        res["gpu"] = torch.cuda.get_device_name(); res["gpu_decode_images_per_s"] = 256 * k / dt
    except Exception as e:
        res["gpu_error"] = str(e)[:200]
    print(json.dumps(res)); open(os.path.join(OUT, "decode.json"), "w").write(json.dumps(res, indent=1) + "\n")
