from refimpl.cli import main

raise SystemExit(main())
