"""`python -m annotated.exercises grade NOTEBOOK...`: see annotated.exercises.grade."""
from annotated.exercises.grade import main

if __name__ == "__main__":
    main()
