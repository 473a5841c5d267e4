from datagen.entry import main

main()
