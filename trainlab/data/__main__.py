"""`python -m trainlab.data [--download] [--root DIR]` (`make data`)."""

import argparse

from trainlab.data import DataConfig, cifar, data_root, load_images


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fetch or inspect the workbook's data.")
    parser.add_argument("--download", action="store_true", help="download and verify real CIFAR-10")
    parser.add_argument("--root", default=None, help="data folder (default: data/ in the repository)")
    args = parser.parse_args(argv)
    cfg = DataConfig(root=args.root)
    if args.download:
        cifar.download(data_root(cfg))
    print(load_images(cfg).describe())


if __name__ == "__main__":
    main()
